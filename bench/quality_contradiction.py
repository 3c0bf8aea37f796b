"""Contradiction evaluation: engram's detector (cosine > threshold and a valence conflict) on SICK and MNLI.

The threshold is swept on SICK train (the only split with contradiction labels meant for tuning);
SICK trial and MNLI dev-matched (binary) are reported untouched. Baseline: always "contradiction"
(the F1 any detector must beat) measured on the same pairs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality_data import Pair, load_nli_binary, load_sick
from bench.quality_embed import CachedEmbedder, pair_cosines
from engram import metrics
from engram.claims import ANTONYMS, valence_conflict, words

THRESHOLDS = np.round(np.concatenate([[-1.0], np.arange(0.30, 0.991, 0.01)]), 2)


def features(embedder: CachedEmbedder, pairs: list[Pair], sick: bool) -> dict[str, np.ndarray]:
    """Cosine, the rule's reason (or ''), and the gold contradiction label."""
    reasons = np.array([valence_conflict(p.a, p.b) or "" for p in pairs])
    gold = np.array([p.judgment == "CONTRADICTION" for p in pairs]) if sick else np.array([p.label for p in pairs])
    return {"cos": pair_cosines(embedder, [p.a for p in pairs], [p.b for p in pairs]), "reason": reasons, "gold": gold}


def antonym_pairs(pairs: list[Pair]) -> Counter:
    """Which ANTONYMS word pairs fire (one word only in a, the other only in b), with the gold judgment."""
    out: Counter = Counter()
    for p in pairs:
        sa, sb = set(words(p.a)), set(words(p.b))
        for x, y in ANTONYMS:
            if (x in sa - sb and y in sb - sa) or (y in sa - sb and x in sb - sa):
                out[f"{x}/{y} ({p.judgment or ('contradiction' if p.label else 'other')})"] += 1
    return out


def _at(f: dict[str, np.ndarray], t: float) -> dict[str, Any]:
    pred = (f["cos"] > t) & (f["reason"] != "")
    out: dict[str, Any] = metrics.prf(pred, f["gold"]).as_dict()
    out["by_reason"] = {
        r: {"fired": int(((f["reason"] == r) & pred).sum()),
            "precision": float(f["gold"][(f["reason"] == r) & pred].mean()) if ((f["reason"] == r) & pred).any() else None}
        for r in sorted(Counter(f["reason"].tolist())) if r
    }
    return out


def _evaluate(f: dict[str, np.ndarray], default: float, support: float, chosen: float) -> dict[str, Any]:
    p = float(f["gold"].mean())
    return {
        "pairs": len(f["gold"]), "positive_share": p,
        "at_default": _at(f, default), "at_support_threshold": _at(f, support), "at_chosen": _at(f, chosen),
        "rule_only": _at(f, -1.0),
        "baseline_always": metrics.prf(np.ones(len(f["gold"]), bool), f["gold"]).as_dict(),
        "roc_auc_rule_then_cos": metrics.roc_auc_or_nan((f["reason"] != "") + f["cos"] / 10, f["gold"]),
        "sweep": metrics.threshold_sweep(f["cos"], f["gold"], THRESHOLDS, f["reason"] != ""),
    }


def run(embedder: CachedEmbedder, sick_train: Path, sick_dev: Path, nli: Path, contradiction_threshold: float,
        support_threshold: float, train_limit: int | None = None, nli_limit: int | None = None) -> dict[str, Any]:
    """Contradiction results: SICK train sweep, SICK trial and MNLI at the default and the chosen threshold."""
    train = load_sick(sick_train)[:train_limit] if train_limit else load_sick(sick_train)
    ft = features(embedder, train, sick=True)
    sweep_train = metrics.threshold_sweep(ft["cos"], ft["gold"], THRESHOLDS, ft["reason"] != "")
    chosen = metrics.best_threshold(sweep_train)["threshold"]
    nli_pairs = load_nli_binary(nli)
    sick_dev_pairs = load_sick(sick_dev)
    fired = [p for p in sick_dev_pairs if valence_conflict(p.a, p.b) == "antonym"]
    return {
        "sick_dev_antonym_pairs": dict(antonym_pairs(fired).most_common(8)),
        "default_threshold": contradiction_threshold, "support_threshold": support_threshold,
        "chosen_threshold_on_sick_train": chosen,
        "sick_train": {"pairs": len(train), "sweep": sweep_train, "at_default": _at(ft, contradiction_threshold)},
        "sick_dev": _evaluate(features(embedder, sick_dev_pairs, sick=True), contradiction_threshold,
                              support_threshold, chosen),
        "mnli": _evaluate(features(embedder, nli_pairs[:nli_limit] if nli_limit else nli_pairs, sick=False),
                          contradiction_threshold, support_threshold, chosen),
    }
