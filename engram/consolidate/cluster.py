"""Clustering of episode embeddings: PCA, then HDBSCAN. Pure numpy in, labels out."""

from __future__ import annotations

import warnings

import numpy as np


def cluster_embeddings(
    vectors: np.ndarray, min_cluster_size: int = 3, pca_dims: int = 32, min_similarity: float = 0.5
) -> np.ndarray:
    """HDBSCAN labels (-1 = noise) for L2-normalised vectors, after PCA to pca_dims.

    PCA first because HDBSCAN's cost explodes with dimension (DESIGN.md: 50k x 384 > 15 min,
    50k x 32 in about a minute). Too few points for a cluster gives all noise. Members whose
    cosine to their cluster centroid (full space) is below min_similarity become noise: on small
    or sparse batches HDBSCAN attaches outliers that share nothing with the cluster.
    """
    n = len(vectors)
    if n < max(min_cluster_size, 2):
        return np.full(n, -1, dtype=np.int64)
    if float(np.ptp(vectors, axis=0).max()) < 1e-6:  # identical points: one cluster, PCA would divide by 0
        return np.zeros(n, dtype=np.int64)
    import hdbscan
    from sklearn.decomposition import PCA

    dims = min(pca_dims, n - 1, vectors.shape[1])
    reduced = PCA(n_components=dims, random_state=0).fit_transform(vectors) if dims < vectors.shape[1] else vectors
    # Normalising after PCA keeps euclidean distance monotone in cosine on the reduced space.
    norms = np.linalg.norm(reduced, axis=1, keepdims=True)
    reduced = reduced / np.where(norms == 0, 1.0, norms)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clusterer = hdbscan.HDBSCAN(
            min_cluster_size=min_cluster_size, min_samples=1, metric="euclidean",
            cluster_selection_method="leaf", core_dist_n_jobs=1,
        )
        labels = clusterer.fit_predict(reduced.astype(np.float64)).astype(np.int64)
    return prune_outliers(vectors, labels, min_similarity)


def prune_outliers(vectors: np.ndarray, labels: np.ndarray, min_similarity: float) -> np.ndarray:
    """Relabel as noise the members far from their cluster centroid; tiny leftovers become noise."""
    labels = labels.copy()
    for label in set(labels.tolist()) - {-1}:
        idx = np.flatnonzero(labels == label)
        keep = centrality(vectors[idx]) >= min_similarity
        labels[idx[~keep]] = -1
        if keep.sum() < 2:
            labels[idx] = -1
    return labels


def centrality(vectors: np.ndarray) -> np.ndarray:
    """Cosine of each member to the cluster's normalised centroid."""
    centroid = vectors.mean(axis=0)
    norm = np.linalg.norm(centroid)
    return vectors @ (centroid / norm if norm else centroid)
