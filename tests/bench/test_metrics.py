"""bench.quality.metrics on hand-made cases whose answers were worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.quality import metrics
from engram.errors import InvalidInput


def test_prf_counts_and_values() -> None:
    # gold:      T T T F F
    # predicted: T F T T F  -> tp 2, fn 1, fp 1, tn 1
    r = metrics.prf([True, False, True, True, False], [True, True, True, False, False])
    assert (r.tp, r.fp, r.fn, r.tn) == (2, 1, 1, 1)
    assert r.precision == pytest.approx(2 / 3)
    assert r.recall == pytest.approx(2 / 3)
    assert r.f1 == pytest.approx(2 / 3)


def test_prf_asymmetric_and_degenerate() -> None:
    r = metrics.prf([True, True, True, True], [True, False, False, False])
    assert (r.precision, r.recall) == (0.25, 1.0)
    assert r.f1 == pytest.approx(0.4)
    none = metrics.prf([False, False], [True, False])
    assert (none.precision, none.recall, none.f1) == (0.0, 0.0, 0.0)
    with pytest.raises(InvalidInput, match="predicted"):
        metrics.prf([True], [True, False])


def test_roc_auc_perfect_inverted_and_ties() -> None:
    assert metrics.roc_auc([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0]) == 1.0
    assert metrics.roc_auc([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0]) == 0.0
    # positives 0.8 and 0.4, negatives 0.6 and 0.4: pairs (0.8>0.6) 1, (0.8>0.4) 1, (0.4<0.6) 0, tie 0.5 -> 2.5/4
    assert metrics.roc_auc([0.8, 0.4, 0.6, 0.4], [1, 1, 0, 0]) == pytest.approx(0.625)
    assert metrics.roc_auc([0.5, 0.5, 0.5], [1, 0, 1]) == pytest.approx(0.5)
    with pytest.raises(InvalidInput, match="labels"):
        metrics.roc_auc([0.1, 0.2], [1, 1])


def test_roc_auc_matches_sklearn_on_random_data() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    scores = np.round(rng.random(200), 2)  # rounding makes ties
    labels = rng.random(200) < scores
    assert metrics.roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))


def test_spearman_monotone_inverse_ties_constant() -> None:
    assert metrics.spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    assert metrics.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x: 1 2 3 4, y with tie: 1 2.5 2.5 4 -> pearson = 4.5 / sqrt(5 * 4.5)
    assert metrics.spearman([1, 2, 3, 4], [1, 5, 5, 9]) == pytest.approx(4.5 / math.sqrt(5 * 4.5))
    assert math.isnan(metrics.spearman([1, 2, 3], [7, 7, 7]))
    with pytest.raises(InvalidInput):
        metrics.spearman([1], [1])


def test_average_ranks() -> None:
    assert metrics.average_ranks([30, 10, 20, 10]).tolist() == [4.0, 1.5, 3.0, 1.5]


def test_recall_at_k() -> None:
    ranked = ["a", "b", "c", "d"]
    assert metrics.recall_at_k(ranked, ["c", "x"], 2) == 0.0
    assert metrics.recall_at_k(ranked, ["c", "x"], 3) == 0.5
    assert metrics.recall_at_k(ranked, ["a"], 1) == 1.0
    with pytest.raises(InvalidInput, match="k"):
        metrics.recall_at_k(ranked, ["a"], 0)
    with pytest.raises(InvalidInput, match="gold"):
        metrics.recall_at_k(ranked, [], 1)


def test_covered_recall_at_k_counts_a_fact_for_all_its_sources() -> None:
    ranked = [{"t1", "t2"}, {"t3"}, set()]
    assert metrics.covered_recall_at_k(ranked, ["t2", "t3", "t9"], 1) == pytest.approx(1 / 3)
    assert metrics.covered_recall_at_k(ranked, ["t2", "t3", "t9"], 2) == pytest.approx(2 / 3)
    assert metrics.covered_recall_at_k([], ["t1"], 5) == 0.0


def test_threshold_sweep_and_choices() -> None:
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    gold = np.array([True, True, False, True])
    extra = np.array([True, False, True, True])
    rows = metrics.threshold_sweep(scores, gold, [0.65, 0.85], extra)
    # t=0.65: predicted = [T, F(extra), T, F] -> tp 1, fp 1, fn 2
    assert rows[0]["precision"] == 0.5
    assert rows[0]["recall"] == pytest.approx(1 / 3)
    assert rows[0]["predicted_share"] == 0.5
    # t=0.85: predicted = [T, F, F, F] -> precision 1, recall 1/3
    assert (rows[1]["precision"], rows[1]["recall"]) == (1.0, pytest.approx(1 / 3))
    assert metrics.best_threshold(rows)["threshold"] == 0.85  # F1 0.5 > 0.4
    assert metrics.threshold_for_precision(rows, 0.9)["threshold"] == 0.85
    assert metrics.threshold_for_precision(rows, 0.4)["threshold"] == 0.65
    assert metrics.threshold_for_precision(rows[:1], 0.9) is None
    with pytest.raises(InvalidInput):
        metrics.best_threshold([])


def test_greedy_match_is_one_to_one() -> None:
    sim = np.array([[0.9, 0.8],
                    [0.85, 0.3],
                    [0.7, 0.75]])
    # best 0.9 (0,0); row 1 then has only col 0 taken -> 0.3 below; row 2 takes col 1 at 0.75
    assert metrics.greedy_match(sim, 0.5) == [(0, 0, 0.9), (2, 1, 0.75)]
    assert metrics.greedy_match(sim, 0.95) == []
    r = metrics.match_prf(sim, 0.5)
    assert (r["matched"], r["precision"], r["recall"]) == (2, pytest.approx(2 / 3), 1.0)
    assert metrics.match_prf(np.zeros((0, 3)), 0.5)["recall"] == 0.0


def test_mean_of_nothing_is_nan() -> None:
    assert math.isnan(metrics.mean([]))
    assert metrics.mean([1, 2]) == 1.5


def test_roc_auc_or_nan_on_one_class() -> None:
    assert math.isnan(metrics.roc_auc_or_nan([0.1, 0.2], [True, True]))
    assert metrics.roc_auc_or_nan([0.1, 0.2], [False, True]) == 1.0


def test_wilson_lower_bound_is_below_the_share_and_tightens_with_more_trials() -> None:
    assert metrics.wilson_lower(0.9, 0) == 0.0
    few, many = metrics.wilson_lower(0.9, 50), metrics.wilson_lower(0.9, 5000)
    assert few < many < 0.9
    assert abs(metrics.wilson_lower(0.9, 100) - 0.8544) < 1e-3  # one-sided 90%: z = 1.2816
    assert metrics.wilson_lower(1.0, 20) < 1.0
