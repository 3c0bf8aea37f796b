"""Clustering: blobs are found, outliers pruned, degenerate inputs handled."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_blobs

from engram.consolidate.cluster import cluster_embeddings, prune_outliers


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_clusters_are_pure_and_cover_every_blob() -> None:
    """Leaf selection prefers small specific clusters (one fact each) over one cluster per topic."""
    x, y = make_blobs(n_samples=90, centers=3, n_features=16, cluster_std=0.3, random_state=0, center_box=(-5, 5))
    labels = cluster_embeddings(_unit(x), min_cluster_size=5, pca_dims=8, min_similarity=0.3)
    clusters = [np.flatnonzero(labels == k) for k in set(labels.tolist()) - {-1}]
    assert all(len(set(y[c].tolist())) == 1 for c in clusters)  # never mixes two blobs
    assert {int(y[c[0]]) for c in clusters} == {0, 1, 2}
    assert (labels >= 0).mean() > 0.6


def test_too_few_points_are_noise_and_identical_points_one_cluster() -> None:
    v = _unit(np.ones((2, 8)))
    assert cluster_embeddings(v, min_cluster_size=3).tolist() == [-1, -1]
    assert cluster_embeddings(_unit(np.ones((4, 8))), min_cluster_size=3).tolist() == [0, 0, 0, 0]


def test_prune_outliers_drops_far_members_and_tiny_leftovers() -> None:
    v = _unit(np.array([[1, 0], [0.99, 0.1], [0.98, 0.15], [-1, 0.05]], dtype=np.float32))
    assert prune_outliers(v, np.array([0, 0, 0, 0]), 0.5).tolist() == [0, 0, 0, -1]
    assert prune_outliers(v, np.array([0, 1, 1, 0]), 0.5).tolist() == [-1, 1, 1, -1]
