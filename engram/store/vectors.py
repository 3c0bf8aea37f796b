"""Vector checks shared by ingest and the embedders: shape, finiteness, normalisation."""

from __future__ import annotations

import numpy as np

from engram.errors import InvalidInput


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation; zero rows stay zero."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def validate_vectors(vectors: np.ndarray, dim: int, field: str = "embedding") -> np.ndarray:
    """Reject vectors of the wrong shape or with NaN/inf, naming the field."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise InvalidInput(f"{field}: expected dimension {dim}, got shape {tuple(arr.shape)}")
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr).all(axis=1))[0])
        raise InvalidInput(f"{field}: row {bad} contains NaN or infinite values")
    return arr


__all__ = ["l2_normalize", "validate_vectors"]
