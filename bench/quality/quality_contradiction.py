"""Contradiction evaluation: engram's detector (engram.consolidate.pair_rules.contradiction) on SICK and MNLI.

The threshold is swept on SICK train (the only split with contradiction labels meant for tuning);
SICK trial and MNLI dev-matched (binary) are reported untouched. Baseline: always "contradiction"
(the F1 any detector must beat) measured on the same pairs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality import metrics
from bench.quality.quality_data import Pair, load_nli_binary, load_sick
from bench.quality.quality_embed import CachedEmbedder, pair_cosines
from engram.consolidate import pair_rules
from engram.text.sentences import ANTONYMS, valence_conflict
from engram.text.tokens import words

THRESHOLDS = np.round(np.concatenate([[-1.0], np.arange(0.30, 0.991, 0.01)]), 2)


def rule_score(a: str, b: str, cos: float) -> tuple[str, float]:
    """The detector as a (reason, score) pair: pair_rules.contradiction(a, b, cos, t) fires exactly when
    reason != "" and score > t. The score is the cosine, or 1.0 when the pair shares enough content words
    above CONTRADICTION_MIN_COSINE (that branch ignores the threshold), so one sweep covers the rule."""
    reason = pair_rules.contradiction(a, b, 1.0, 0.0) or ""  # valence conflict about the same subject
    shared = pair_rules.view(a, b).jaccard >= pair_rules.CONTRADICTION_MIN_SHARED
    return reason, 1.0 if shared and cos > pair_rules.CONTRADICTION_MIN_COSINE else cos


def features(embedder: CachedEmbedder, pairs: list[Pair], sick: bool) -> dict[str, np.ndarray]:
    """Detector score (see rule_score), the rule's reason (or ''), and the gold contradiction label."""
    cos = pair_cosines(embedder, [p.a for p in pairs], [p.b for p in pairs])
    scored = [rule_score(p.a, p.b, float(c)) for p, c in zip(pairs, cos, strict=True)]
    gold = np.array([p.judgment == "CONTRADICTION" for p in pairs]) if sick else np.array([p.label for p in pairs])
    return {"cos": np.array([x for _, x in scored]), "reason": np.array([r for r, _ in scored]), "gold": gold}


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


def _evaluate(f: dict[str, np.ndarray], default: float, support: float, chosen: float,
              budget: float | None) -> dict[str, Any]:
    p = float(f["gold"].mean())
    return {
        "pairs": len(f["gold"]), "positive_share": p,
        "at_default": _at(f, default), "at_support_threshold": _at(f, support), "at_chosen": _at(f, chosen),
        "at_alarm_budget": _at(f, budget) if budget is not None else None,
        "rule_only": _at(f, -1.0),
        "baseline_always": metrics.prf(np.ones(len(f["gold"]), bool), f["gold"]).as_dict(),
        "roc_auc_rule_then_cos": metrics.roc_auc_or_nan((f["reason"] != "") + f["cos"] / 10, f["gold"]),
        "sweep": metrics.threshold_sweep(f["cos"], f["gold"], THRESHOLDS, f["reason"] != ""),
    }


ALARM_THRESHOLDS = np.round(np.arange(0.50, 0.951, 0.01), 2)
# A contradiction halves two facts: the threshold is the lowest one at which at most this many turns in
# 1,000 of one conversation raise an alarm against another turn (false alarms, see conversation_alarms).
ALARM_BUDGET_PER_1000_TURNS = 20.0


def conversation_alarms(embedder: CachedEmbedder, locomo: Path, max_conversations: int | None = None,
                        examples: int = 4) -> dict[str, Any]:
    """How often the detector fires on pairs of turns within one LoCoMo conversation, per threshold.

    SICK pairs all describe one scene, so a valence difference there usually is a contradiction. A
    memory compares statements of one user about many things; the speakers of these dialogues do not
    contradict themselves, so what fires here is (nearly all) false alarms: the cost side of a low
    threshold. Turns are taken as the extractive stage states them ("speaker: best sentence").
    """
    from engram.store.locomo import locomo_records
    from engram.text.sentences import best_sentence

    by_user: dict[str, list[str]] = {}
    for r in locomo_records(locomo):
        by_user.setdefault(r["user_id"], []).append(f"{r['role']}: {best_sentence(r['content'])}")
    users = sorted(by_user)[:max_conversations] if max_conversations else sorted(by_user)
    fired_cos: list[float] = []
    reasons: Counter = Counter()
    shown: list[dict[str, Any]] = []
    turns = 0
    for u in users:
        texts = by_user[u]
        turns += len(texts)
        vecs = embedder.embed(texts)
        sims = np.triu(vecs @ vecs.T, 1)
        for i, j in zip(*np.nonzero(sims > ALARM_THRESHOLDS[0]), strict=True):
            why, score = rule_score(texts[i], texts[j], float(sims[i, j]))
            if why:
                fired_cos.append(score)
                reasons[why] += 1
                if sims[i, j] > 0.85 and len(shown) < examples:
                    shown.append({"cos": float(sims[i, j]), "a": texts[i][:120], "b": texts[j][:120], "why": why})
    cos = np.array(fired_cos)
    rate = {f"{t:.2f}": 1000 * float((cos > t).sum()) / max(turns, 1) for t in ALARM_THRESHOLDS}
    within = [float(t) for t in ALARM_THRESHOLDS if rate[f"{t:.2f}"] <= ALARM_BUDGET_PER_1000_TURNS]
    return {
        "conversations": len(users), "turns": turns, "reasons": dict(reasons), "examples": shown,
        "alarms_per_1000_turns": rate, "budget_per_1000_turns": ALARM_BUDGET_PER_1000_TURNS,
        "lowest_threshold_within_budget": min(within) if within else None,
    }


def run(embedder: CachedEmbedder, sick_train: Path, sick_dev: Path, nli: Path, contradiction_threshold: float,
        support_threshold: float, train_limit: int | None = None, nli_limit: int | None = None,
        locomo: Path | None = None, locomo_conversations: int | None = None) -> dict[str, Any]:
    """Contradiction results: SICK train sweep, SICK trial and MNLI at the default and the chosen threshold,
    and the false-alarm rate on LoCoMo conversations when `locomo` is given."""
    train = load_sick(sick_train)[:train_limit] if train_limit else load_sick(sick_train)
    ft = features(embedder, train, sick=True)
    sweep_train = metrics.threshold_sweep(ft["cos"], ft["gold"], THRESHOLDS, ft["reason"] != "")
    chosen = metrics.best_threshold(sweep_train)["threshold"]
    nli_pairs = load_nli_binary(nli)
    sick_dev_pairs = load_sick(sick_dev)
    alarms = conversation_alarms(embedder, locomo, locomo_conversations) if locomo else None
    budget = alarms["lowest_threshold_within_budget"] if alarms else None
    fired = [p for p in sick_dev_pairs if valence_conflict(p.a, p.b) == "antonym"]
    return {
        "sick_dev_antonym_pairs": dict(antonym_pairs(fired).most_common(8)),
        "default_threshold": contradiction_threshold, "support_threshold": support_threshold,
        "chosen_threshold_on_sick_train": chosen,
        "sick_train": {"pairs": len(train), "sweep": sweep_train, "at_default": _at(ft, contradiction_threshold),
                       "at_alarm_budget": _at(ft, budget) if budget is not None else None},
        "sick_dev": _evaluate(features(embedder, sick_dev_pairs, sick=True), contradiction_threshold,
                              support_threshold, chosen, budget),
        "mnli": _evaluate(features(embedder, nli_pairs[:nli_limit] if nli_limit else nli_pairs, sick=False),
                          contradiction_threshold, support_threshold, chosen, budget),
        "conversation_alarms": alarms,
    }
