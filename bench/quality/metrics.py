"""Evaluation metrics as pure numpy functions: P/R/F1, ROC-AUC, Spearman, recall@k, matching."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from engram.errors import InvalidInput


@dataclass(frozen=True)
class PRF:
    """Precision, recall, F1 and the confusion counts behind them."""

    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int
    tn: int

    def as_dict(self) -> dict[str, float | int]:
        """Plain dict for JSON."""
        return asdict(self)


def _bool_array(values: Iterable[bool] | np.ndarray, field: str) -> np.ndarray:
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values)
    if arr.ndim != 1:
        raise InvalidInput(f"{field}: expected a 1-d sequence")
    return arr.astype(bool)


def prf(predicted: Iterable[bool] | np.ndarray, gold: Iterable[bool] | np.ndarray) -> PRF:
    """Precision/recall/F1 of binary predictions; an empty denominator gives 0.0 (never NaN)."""
    p, g = _bool_array(predicted, "predicted"), _bool_array(gold, "gold")
    if p.shape != g.shape:
        raise InvalidInput(f"predicted: length {len(p)} differs from gold length {len(g)}")
    tp = int((p & g).sum())
    fp = int((p & ~g).sum())
    fn = int((~p & g).sum())
    tn = int((~p & ~g).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return PRF(precision, recall, f1, tp, fp, fn, tn)


def roc_auc(scores: Sequence[float] | np.ndarray, labels: Iterable[bool] | np.ndarray) -> float:
    """Area under the ROC curve: P(score of a random positive > a random negative), ties count half."""
    s = np.asarray(scores, dtype=np.float64)
    y = _bool_array(labels, "labels")
    if s.shape != y.shape:
        raise InvalidInput(f"scores: length {len(s)} differs from labels length {len(y)}")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise InvalidInput("labels: ROC-AUC needs at least one positive and one negative")
    ranks = average_ranks(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(v, kind="mergesort")
    ranks = np.empty(len(v), dtype=np.float64)
    sorted_v = v[order]
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman rank correlation (Pearson on average ranks); NaN when either side is constant."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise InvalidInput("x: spearman needs two 1-d sequences of the same length")
    if len(a) < 2:
        raise InvalidInput("x: spearman needs at least two values")
    ra, rb = average_ranks(a), average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = float(np.sqrt((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denom) if denom else float("nan")


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of the gold items found in the first k ranked items (duplicates in `ranked` count once)."""
    if k < 1:
        raise InvalidInput(f"k: must be >= 1, got {k}")
    wanted = set(gold)
    if not wanted:
        raise InvalidInput("gold: recall needs at least one gold item")
    return len(wanted & set(ranked[:k])) / len(wanted)


def covered_recall_at_k(ranked_sets: Sequence[Iterable[str]], gold: Iterable[str], k: int) -> float:
    """recall@k when each ranked item covers a set of gold ids (a fact covers its source turns)."""
    if k < 1:
        raise InvalidInput(f"k: must be >= 1, got {k}")
    wanted = set(gold)
    if not wanted:
        raise InvalidInput("gold: recall needs at least one gold item")
    seen: set[str] = set()
    for item in ranked_sets[:k]:
        seen.update(item)
    return len(wanted & seen) / len(wanted)


def threshold_sweep(scores: np.ndarray, gold: np.ndarray, thresholds: Iterable[float],
                    extra: np.ndarray | None = None) -> list[dict[str, float]]:
    """P/R/F1 of `score > t` (and `extra`, a boolean mask that must also hold) for each threshold t."""
    s = np.asarray(scores, dtype=np.float64)
    g = _bool_array(gold, "gold")
    mask = np.ones(len(s), dtype=bool) if extra is None else _bool_array(extra, "extra")
    out = []
    for t in thresholds:
        r = prf((s > t) & mask, g)
        out.append({"threshold": round(float(t), 4), "precision": r.precision, "recall": r.recall, "f1": r.f1,
                    "predicted_share": float(((s > t) & mask).mean()) if len(s) else 0.0})
    return out


def best_threshold(sweep: list[dict[str, float]], key: str = "f1") -> dict[str, float]:
    """The sweep row with the highest `key` (the lowest threshold among ties)."""
    if not sweep:
        raise InvalidInput("sweep: empty")
    return max(sweep, key=lambda r: (r[key], -r["threshold"]))


def greedy_match(similarity: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """One-to-one matching of rows to columns by descending similarity, pairs with sim >= threshold."""
    sim = np.asarray(similarity, dtype=np.float64)
    if sim.ndim != 2:
        raise InvalidInput("similarity: expected a 2-d matrix")
    rows, cols = np.nonzero(sim >= threshold)
    order = np.lexsort((cols, rows, -sim[rows, cols]))
    used_r: set[int] = set()
    used_c: set[int] = set()
    pairs = []
    for i in order:
        r, c = int(rows[i]), int(cols[i])
        if r in used_r or c in used_c:
            continue
        used_r.add(r)
        used_c.add(c)
        pairs.append((r, c, float(sim[r, c])))
    return pairs


def match_prf(similarity: np.ndarray, threshold: float) -> dict[str, float]:
    """Precision (matched predictions / predictions), recall (matched gold / gold), F1 of a 1:1 matching.

    Rows are predictions, columns gold items. Duplicated predictions match once, so they cost precision.
    """
    n_pred, n_gold = similarity.shape
    matched = len(greedy_match(similarity, threshold)) if n_pred and n_gold else 0
    precision = matched / n_pred if n_pred else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "matched": matched,
            "predicted": n_pred, "gold": n_gold}


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; NaN for no values (reported as n/a, never as 0)."""
    vals = list(values)
    return float(np.mean(vals)) if vals else float("nan")


def threshold_for_precision(sweep: list[dict[str, float]], target: float) -> dict[str, float] | None:
    """The lowest-threshold sweep row whose precision reaches `target` (None when no row does)."""
    rows = [r for r in sweep if r["precision"] >= target and r["recall"] > 0]
    return min(rows, key=lambda r: r["threshold"]) if rows else None


def wilson_lower(share: float, n: int, z: float = 1.2816) -> float:
    """Lower end of the Wilson score interval of a share seen in n trials (z 1.2816: one-sided 90%)."""
    if n <= 0:
        return 0.0
    centre = share + z * z / (2 * n)
    spread = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n)


def roc_auc_or_nan(scores: Sequence[float] | np.ndarray, labels: Iterable[bool] | np.ndarray) -> float:
    """roc_auc, or NaN when the labels hold a single class (small or unseen splits)."""
    y = _bool_array(labels, "labels")
    if y.all() or not y.any():
        return float("nan")
    return roc_auc(scores, y)
