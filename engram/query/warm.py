"""Warm-up of a serving process: the one-time costs of a first search, paid before a query waits on them.

A process's first search loads the embedder, maps the tenant's index generation and reads its delta,
and the first question that names a time loads the date parser (import, locale data and time-zone
patterns: ~0.6 s once, then milliseconds a query). A server pays them at start, in the background,
so its first answers are as fast as the rest. One-shot processes (`engram search`) do not warm up:
they would pay the same costs for nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engram.settings import Settings

log = logging.getLogger(__name__)

# Names a relative time and a calendar date, so both of the date parser's paths are loaded.
WARM_QUERY = "what happened last week, on 3 May 2023?"
# Embedders behind a paid API: the warm-up searches by words only (the indexes and the date parser are
# loaded all the same), so a server start makes no API call.
REMOTE_EMBEDDERS = {"gemini"}


def warm_up(settings: Settings, user_id: str, *, con: Any = None, embedder: Any = None) -> float | None:
    """Run one search whose answer is dropped (the tenant's indexes, the embedder and the date parser are
    loaded by it); returns its seconds, or None when the store does not exist yet (nothing is created)."""
    from engram.query.search import search_memory

    if con is None and not Path(settings.db_path).exists():
        log.info("search warm-up skipped: no store yet")
        return None
    started = time.perf_counter()
    method = "lexical" if settings.embedder in REMOTE_EMBEDDERS else "hybrid"
    search_memory(WARM_QUERY, "both", 1, user_id, settings=settings, con=con, embedder=embedder, method=method)
    secs = time.perf_counter() - started
    log.info("search warmed up in %.2f s", secs)
    return secs


def warm_up_in_background(run: Callable[[], Any]) -> threading.Thread:
    """Start `run` (a warm-up) on a daemon thread; a failure is logged (its type only) and never raised."""

    def quietly() -> None:
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - a warm-up that fails leaves the first query to pay
            log.warning("search warm-up failed (%s); the first search pays the start-up costs",
                        type(exc).__name__)
            log.debug("search warm-up failure", exc_info=True)

    thread = threading.Thread(target=quietly, name="engram-search-warm-up", daemon=True)
    thread.start()
    return thread
