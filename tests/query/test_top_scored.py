"""search.top_scored: the lexical candidates of a large table, chosen without listing every matching row."""

from __future__ import annotations

import numpy as np
import pytest

from engram.query.search import top_scored


def reference(scores: np.ndarray, want: int) -> np.ndarray:
    """The `want` highest positive scores by sorting everything: score descending, then position."""
    pos = np.flatnonzero(scores > 0)
    order = np.lexsort((pos, -scores[pos]))
    return np.sort(pos[order[:want]])


@pytest.mark.parametrize("seed", range(40))
def test_the_same_rows_as_sorting_every_score(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    scores = np.zeros(n, np.float32)
    hit = rng.random(n) < rng.choice([0.001, 0.05, 0.5, 1.0])
    # few distinct values: many ties at the cut, as copies of one text score alike
    scores[hit] = rng.choice(rng.random(int(rng.integers(1, 20))).astype(np.float32) * 10, int(hit.sum()))
    for want in (1, 5, 40, 120, n + 5):
        assert np.array_equal(top_scored(scores, want), reference(scores, want)), (seed, want)
        assert np.array_equal(top_scored(scores, want, float(scores.max())), reference(scores, want))


def test_one_dominant_row_still_yields_the_rest():
    scores = np.zeros(1000, np.float32)
    scores[7] = 1000.0
    scores[100:200] = 1.0  # far below half and an eighth of the best: found by the last pass
    got = top_scored(scores, 40)
    assert got.tolist() == [7, *range(100, 139)]


def test_nothing_when_no_row_scores():
    assert top_scored(np.zeros(10, np.float32), 5).size == 0
    assert top_scored(np.zeros(0, np.float32), 5).size == 0
    assert top_scored(np.ones(3, np.float32), 0).size == 0
