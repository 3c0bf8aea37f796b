"""Lazy time decay of a fact's confidence: read by queries (what may be returned) and by the nightly stages."""

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
