"""Dedupe evaluation: engram's pair-level merge rule on MSRP and SICK, threshold chosen on train only.

The rule under test is the one the merge stage applies to a pair of facts,
engram.consolidate.pair_rules.same_statement (cosine > merge_threshold, a merge model on cosine and
lexical overlap, no valence conflict, no swapped word/direction/role). The cosine sweep shows the old
rule (cosine > threshold and no valence conflict) beside it. A token-Jaccard rule with its own
train-chosen threshold is the baseline, and exact normalised-text equality (content_hash) the floor.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality import metrics
from bench.quality.quality_data import Pair, load_msrp, load_sick
from bench.quality.quality_embed import CachedEmbedder, pair_cosines
from engram.consolidate.merge_screen import same_statements
from engram.text.normalize import content_hash

THRESHOLDS = np.round(np.arange(0.50, 0.991, 0.01), 2)
MERGE_PRECISION = 0.9  # the precision a merge decision should have on train (a wrong merge hides a fact)


def jaccard(a: str, b: str) -> float:
    """Token-set Jaccard similarity (the baseline)."""
    ta, tb = set(re.findall(r"[a-z0-9]+", a.lower())), set(re.findall(r"[a-z0-9]+", b.lower()))
    return len(ta & tb) / len(ta | tb) if ta | tb else 1.0


def pair_features(embedder: CachedEmbedder, pairs: list[Pair]) -> dict[str, np.ndarray]:
    """Cosine, Jaccard, valence agreement, exact-hash equality and labels of each pair."""
    a, b = [p.a for p in pairs], [p.b for p in pairs]
    cos = pair_cosines(embedder, a, b)
    return {
        "cos": cos,
        "jaccard": np.array([jaccard(x, y) for x, y in zip(a, b, strict=True)]),
        # same_statement(a, b, cos, t) == (cos > t) & agree: the rule but its cosine floor, so every sweep
        # below measures what the merge stage applies (same_statements: the stage's batch form of it)
        "agree": np.array(same_statements([(x, y, float(c), -1.0) for x, y, c in zip(a, b, cos, strict=True)]), dtype=bool),
        "same_hash": np.array([content_hash(x) == content_hash(y) for x, y in zip(a, b, strict=True)]),
        "label": np.array([p.label for p in pairs]),
        "relatedness": np.array([p.relatedness if p.relatedness is not None else np.nan for p in pairs]),
        "contradiction": np.array([p.judgment == "CONTRADICTION" for p in pairs]),
    }


def _merged(f: dict[str, Any], threshold: float) -> np.ndarray:
    """What the merge stage merges at this merge_threshold (pair_rules.same_statement)."""
    return (f["cos"] > threshold) & f["agree"]


def _at(f: dict[str, Any], threshold: float) -> dict[str, float]:
    pred = _merged(f, threshold)
    out = metrics.prf(pred, f["label"]).as_dict()
    if f["contradiction"].any():
        out["contradictions_merged"] = float(pred[f["contradiction"]].mean())
        out["contradictions_above_cos"] = float((f["cos"] > threshold)[f["contradiction"]].mean())
    return out


def evaluate_source(embedder: CachedEmbedder, name: str, train: list[Pair], dev: list[Pair],
                    default: float, support: float) -> dict[str, Any]:
    """Sweep on train, pick the F1-best threshold there, report dev at that and at the default."""
    ft, fd = pair_features(embedder, train), pair_features(embedder, dev)
    sweep_train = metrics.threshold_sweep(ft["cos"], ft["label"], THRESHOLDS, ft["agree"])
    sweep_dev = metrics.threshold_sweep(fd["cos"], fd["label"], THRESHOLDS, fd["agree"])
    chosen = metrics.best_threshold(sweep_train)["threshold"]
    # a merge hides the losers from retrieval: the second choice asks for MERGE_PRECISION on train
    strict_row = metrics.threshold_for_precision(sweep_train, MERGE_PRECISION)
    strict = strict_row["threshold"] if strict_row else None
    jac_sweep = metrics.threshold_sweep(ft["jaccard"], ft["label"], np.round(np.arange(0.05, 0.96, 0.01), 2))
    jac_t = metrics.best_threshold(jac_sweep)["threshold"]
    out: dict[str, Any] = {
        "source": name, "train_pairs": len(train), "dev_pairs": len(dev),
        "dev_positive_share": float(fd["label"].mean()),
        "roc_auc_cosine_dev": metrics.roc_auc_or_nan(fd["cos"], fd["label"]),
        "roc_auc_jaccard_dev": metrics.roc_auc_or_nan(fd["jaccard"], fd["label"]),
        "default_threshold": default, "chosen_threshold_on_train": chosen,
        "dev_at_default": _at(fd, default), "dev_at_chosen": _at(fd, chosen),
        "support_threshold": support, "dev_at_support": _at(fd, support),
        "train_at_default": _at(ft, default), "train_at_chosen": _at(ft, chosen),
        "merge_precision_target": MERGE_PRECISION, "precision_threshold_on_train": strict,
        "dev_at_precision_threshold": _at(fd, strict) if strict is not None else None,
        "baseline_jaccard": {"threshold_on_train": jac_t,
                             "dev": metrics.prf(fd["jaccard"] > jac_t, fd["label"]).as_dict()},
        "baseline_exact_hash": {"dev": metrics.prf(fd["same_hash"], fd["label"]).as_dict()},
        "sweep_train": sweep_train, "sweep_dev": sweep_dev,
    }
    if not np.isnan(fd["relatedness"]).all():
        out["spearman_cos_relatedness_dev"] = metrics.spearman(fd["cos"], fd["relatedness"])
        out["spearman_jaccard_relatedness_dev"] = metrics.spearman(fd["jaccard"], fd["relatedness"])
        merged = np.flatnonzero(_merged(fd, default) & fd["contradiction"])
        out["merged_contradictions_dev"] = [
            {"a": dev[i].a, "b": dev[i].b, "cos": float(fd["cos"][i])} for i in merged[:8]]
        out["contradiction_merge_curve_dev"] = [
            {"threshold": float(t), "merged": float(_merged(fd, t)[fd["contradiction"]].mean()),
             "above_cosine": float((fd["cos"] > t)[fd["contradiction"]].mean())} for t in THRESHOLDS
        ]
    return out


def run(embedder: CachedEmbedder, msrp_train: Path, msrp_dev: Path, sick_train: Path, sick_dev: Path,
        merge_threshold: float, support_threshold: float, limit: int | None = None) -> dict[str, Any]:
    """Dedupe results for MSRP and SICK."""
    def cut(pairs: list[Pair]) -> list[Pair]:
        return pairs[:limit] if limit else pairs

    return {
        "msrp": evaluate_source(embedder, "MSRP", cut(load_msrp(msrp_train)), load_msrp(msrp_dev), merge_threshold,
                               support_threshold),
        "sick": evaluate_source(embedder, "SICK", cut(load_sick(sick_train)), load_sick(sick_dev), merge_threshold,
                               support_threshold),
    }
