"""Time windows over an index's rows: each row's moment, and the rows a question's windows hold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The time a question's window reads of a row, as sql/queries/{fact,episode}_ids_in_window.sql do: a fact's
# valid_from, else when it was asserted; an episode's created_at.
WINDOW_TIME = {"facts": ("valid_from", "asserted_at"), "episodes": ("created_at",)}
_UNDATED = np.iinfo(np.int64).min  # no window holds it


def row_moments(columns: pa.Table, table: str) -> np.ndarray:
    """Each row's time as a window reads it (WINDOW_TIME), microseconds since the epoch, naive UTC;
    _UNDATED for a row without one."""
    names = WINDOW_TIME[table]
    moment = columns[names[0]] if len(names) == 1 else pc.coalesce(*(columns[n] for n in names))
    return np.asarray(moment.cast(pa.timestamp("us")).cast(pa.int64()).fill_null(_UNDATED).to_numpy(),
                      dtype=np.int64)


def _spans(windows: Sequence[Any]) -> list[tuple[int, int]]:
    """The windows' [start, end) in microseconds since the epoch (naive UTC, as row_moments counts),
    overlapping ones merged: disjoint and ascending."""
    bounds = sorted(tuple(int(np.datetime64(t, "us").astype(np.int64)) for t in (w.start, w.end)) for w in windows)
    merged: list[tuple[int, int]] = []
    for start, end in bounds:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def in_windows(moments: np.ndarray, windows: Sequence[Any]) -> np.ndarray:
    """Mask of the moments inside any window ([start, end), naive UTC)."""
    inside = np.zeros(len(moments), bool)
    for start, end in _spans(windows):
        inside |= (moments >= start) & (moments < end)
    return inside


def sorted_ranges(sorted_moments: np.ndarray, windows: Sequence[Any]) -> list[tuple[int, int]]:
    """Each window's [lo, hi) in the sorted moments (disjoint: overlapping windows are merged first)."""
    spans = _spans(windows)
    if not spans:
        return []
    at = np.searchsorted(sorted_moments, np.array(spans, np.int64).ravel(), side="left").reshape(-1, 2)
    return [(int(lo), int(hi)) for lo, hi in at if hi > lo]


def sorted_in_windows(sorted_moments: np.ndarray, order: np.ndarray, windows: Sequence[Any]) -> np.ndarray:
    """Positions (ascending) of the rows inside any window, given the moments sorted and each one's row
    (`order`): a binary search per window, then the rows found sorted."""
    ranges = sorted_ranges(sorted_moments, windows)
    if not ranges:
        return np.zeros(0, np.int64)
    found = np.concatenate([np.asarray(order[lo:hi]) for lo, hi in ranges])
    if len(found) > len(order) // 8:  # most rows: a mask costs less than sorting them
        mask = np.zeros(len(order), bool)
        mask[found] = True
        return np.flatnonzero(mask)
    return np.sort(found)
