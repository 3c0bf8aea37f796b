"""unique_sorted: np.unique's answer without its hash table."""

from __future__ import annotations

import numpy as np

from engram.arrays import unique_sorted


def test_unique_sorted_is_np_unique() -> None:
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 50, 5000):
        x = rng.integers(-20, 20, n)
        got = unique_sorted(x)
        assert got.dtype == x.dtype and np.array_equal(got, np.unique(x))
    grid = rng.integers(0, 5, (4, 6))
    assert np.array_equal(unique_sorted(grid), np.unique(grid))


def test_unique_sorted_leaves_its_input_alone() -> None:
    x = np.array([3, 1, 3, 2])
    assert unique_sorted(x).tolist() == [1, 2, 3] and x.tolist() == [3, 1, 3, 2]
