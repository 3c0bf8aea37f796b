"""Confidence arithmetic of the nightly stages: evidence accumulation (the decay is engram.decay)."""

from __future__ import annotations

import numpy as np


def reinforced(confidence: float, supports: int, gain: float) -> float:
    """Apply c += gain * (1 - c) once per supporting episode."""
    return 1.0 - (1.0 - confidence) * (1.0 - gain) ** supports


def reinforced_array(confidence: np.ndarray, supports: np.ndarray, gain: float) -> np.ndarray:
    """reinforced() for many facts, the same floats: the power is Python's, taken once per count."""
    power = np.array([(1.0 - gain) ** n for n in range(int(supports.max(initial=0)) + 1)])
    return 1.0 - (1.0 - confidence) * power[supports]


def initial_confidence(cluster_size: int, base: float, gain: float) -> float:
    """A new fact starts at base, reinforced by every cluster member beyond the first."""
    return reinforced(base, max(cluster_size - 1, 0), gain)
