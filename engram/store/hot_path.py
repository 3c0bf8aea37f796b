"""Which way an agent's call goes: through the live store, or through the inbox and the published indexes.

Opening the store costs a write tens of ms (the open, and a checkpoint on close) and a search more (it
rebuilds a small tenant's in-memory index after every write), while a segment appended to the inbox, or a
search of the published indexes plus the inbox, costs a few. The inbox is only worth it while something
folds it soon: an embedding worker that watches the store (engram.embed.worker.watch) says so by touching
a mark in the store's inbox every HEARTBEAT_S. ENGRAM_HOT_PATH=auto (the default) takes the inbox while
that mark is fresh and the store otherwise, so a store without a worker (`engram ingest` then `engram
sql`) sees each write at once, as it always did.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from engram.store import inbox

log = logging.getLogger(__name__)

WORKER_MARK = ".worker"  # a dot name: inbox.tenants() never takes it for a tenant's folder
HEARTBEAT_S = 1.0
# a mark older than this belongs to a worker that stopped (killed, or stuck): writes go to the store again
FRESH_S = 10.0
# a larger write pays the store's open once for many rows, and would give every reader of the inbox a
# large segment to convert until a publish covers it: in auto mode it goes to the store
AUTO_INBOX_MAX_ROWS = 1000


def worker_mark(settings: Any) -> Path:
    """The file an embedding worker that watches this store (one shard file) keeps touching."""
    return inbox.root(settings) / WORKER_MARK


def worker_watching(settings: Any, now: float | None = None) -> bool:
    """Whether an embedding worker touched this store's mark within FRESH_S seconds."""
    try:
        touched = os.stat(worker_mark(settings)).st_mtime
    except OSError:
        return False
    return (time.time() if now is None else now) - touched <= FRESH_S


def off_store(settings: Any, rows: int = 0) -> bool:
    """Whether this call (a write of `rows` records, or a search: 0) skips the live store: always with
    ENGRAM_HOT_PATH=inbox, never with shared, and with auto while a worker watches the store (a write
    of at most AUTO_INBOX_MAX_ROWS records)."""
    mode = settings.hot_path
    if mode == "inbox":
        return True
    if mode == "shared" or rows > AUTO_INBOX_MAX_ROWS:
        return False
    return worker_watching(settings)


def touch_worker_mark(settings: Any) -> bool:
    """Mark the store as watched now; only a store (or inbox) that exists gets a mark (a worker never
    creates a store). True when marked."""
    if not Path(settings.db_path).exists() and not inbox.root(settings).exists():
        return False
    path = worker_mark(settings)
    try:
        path.parent.mkdir(exist_ok=True)
        path.touch()
    except OSError as exc:  # the worker goes on; writers then take the store, as without a worker
        log.warning("embedding worker: cannot mark %s as watched (%s)", path, exc.strerror or exc)
        return False
    return True


def clear_worker_mark(settings: Any) -> None:
    """Remove the mark (a worker that stops): writers take the store at once, not FRESH_S later."""
    try:
        worker_mark(settings).unlink(missing_ok=True)
    except OSError:
        pass  # it goes stale within FRESH_S
