"""Background work yields the CPU to the agent's hot path.

The night shares the machine with agents that write and search while it runs. It lowers its own
process's priority (niceness, Unix) so the scheduler serves the hot path first: on 2 cores a search
competes with a night that would use both. A process cannot raise its priority back without
privilege, so only the nightly flows call this (and `engram consolidate` through them), never a
search. The embedding worker keeps its priority: the night waits for the worker's short holds of
the store (up to ENGRAM_LOCK_TIMEOUT_S), and a starved worker would make it wait longer, while
nothing waits on the night.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def yield_cpu(niceness: int) -> int:
    """Make this process at least `niceness` nice (0 leaves it); returns its niceness now (0 where the
    platform has none)."""
    if not hasattr(os, "nice"):
        return 0
    current = os.nice(0)
    if niceness <= current:
        return current
    try:
        now = os.nice(niceness - current)
    except OSError as exc:  # a sandbox may forbid it: the work still runs, at the priority it has
        log.warning("background work keeps its CPU priority (niceness %d): %s", current, exc)
        return current
    log.info("background work runs at niceness %d", now)
    return now
