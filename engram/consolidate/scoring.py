"""Confidence arithmetic: evidence accumulation, lazy time decay, contradiction penalty."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np


def days_between(earlier: datetime, later: datetime) -> float:
    """Days from earlier to later, never negative."""
    return max((later - earlier).total_seconds(), 0.0) / 86400.0


def decayed(confidence: float, since: datetime, as_of: datetime, rate: float) -> float:
    """c * exp(-rate * days): the stored confidence brought forward to as_of."""
    return confidence * math.exp(-rate * days_between(since, as_of))


def decayed_array(confidence: np.ndarray, age_days: np.ndarray, rate: float) -> np.ndarray:
    """Vectorised decay for many facts."""
    return confidence * np.exp(-rate * np.maximum(age_days, 0.0))


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
