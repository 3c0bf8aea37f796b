"""The embedding worker: drain every tenant's queue, sleep a poll interval, again, until stopped.

The store is open only while a pass drains (drain opens short connections and closes the store while
the model runs), so the night and other writers get in between. A store the night keeps locked is
skipped for this pass after a short wait (LOCK_WAIT_S, not the 30 s a writer waits) and tried again
at the next one; meanwhile the worker embeds the inbox beside the store, in few model runs. (A pass
that tried a store found held once, without the wait, saved CPU but lost acknowledged records under
kill -9 in bench/perf/inbox_kills.py, for a cause not found: keep the wait.) Logs carry counts and
store paths, never memory text. An inbox segment the fold cannot read is quarantined and the pass goes
on (engram.store.fold); the worker logs each such notice once and keeps running.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from engram.embed.models import Embedder
from engram.embed.queue import drain_tables
from engram.index.writer import write_tenant
from engram.settings import Settings
from engram.store import db, hot_path, inbox, inbox_notices
from engram.store.sharding import all_shard_settings
from engram.store.vectors import l2_normalize, validate_vectors

log = logging.getLogger(__name__)

LOCK_WAIT_S = 1.0  # how long a pass waits for a locked store before leaving it to the next pass
# A reader of the published index plus the inbox tokenizes the inbox rows' text at its first search of the
# tenant, and embeds the newest ones that have no vector in the inbox (folded rows are embedded in the store
# only): 100 BEAM turns (~260,000 characters) cost a first search ~0.5 s. Past this much text the tenant
# is republished whatever its row count.
INBOX_PUBLISH_CHARS = 100_000
TABLES = ("episodes", "facts")

Pass = Callable[[Settings, Embedder], dict[str, int]]


def drain_once(settings: Settings, embedder: Embedder, stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """One pass: embed the pending episodes, then facts, of every tenant in every existing store file.

    Returns the rows embedded per table and `locked`, the stores skipped because another process held
    them longer than LOCK_WAIT_S. A missing store is skipped (the worker never creates one); any other
    error (a failing embedder) is raised, with what was embedded before it kept.
    """
    counts = {"episodes": 0, "facts": 0, "locked": 0, "inbox_embedded": 0, "republished": 0}
    short = settings.model_copy(update={"lock_timeout_s": min(settings.lock_timeout_s, LOCK_WAIT_S)})
    for store in all_shard_settings(short):  # a shard with only an inbox has work too
        if not Path(store.db_path).exists() and not inbox.root(store).exists():
            continue  # nothing to embed; an inbox beside no store is the first writes of ENGRAM_HOT_PATH=inbox (or auto)
        if stop is not None and stop():
            return counts
        try:
            for table, n in drain_tables(store, embedder, TABLES, stop=stop).items():
                counts[table] += n
        except Exception as exc:  # only the lock is routine: the night holds the store for a while
            if not db.is_lock_timeout(exc):
                raise
            counts["locked"] += 1
            # readers that find the store held find the inbox's episodes by meaning with these vectors
            counts["inbox_embedded"] += embed_inbox(store, embedder, stop)
            continue
        counts["republished"] += republish_inbox(store, embedder)
    return counts


def republish_inbox(settings: Settings, embedder: Embedder) -> int:
    """Rewrite the episodes index of each tenant whose inbox holds settings.inbox_publish_rows folded
    episodes or more (or INBOX_PUBLISH_CHARS characters of their text), and drop those segments: a reader
    of the published index plus the inbox then merges a few rows, not a day's. Skipped (for the next pass)
    while another process holds the store."""
    if not settings.search_index or settings.inbox_publish_rows <= 0:
        return 0
    done = 0
    for user in inbox.tenants(settings):
        covered = inbox.folded_stems(settings, user)  # listed before the index reads the store
        missed = inbox.unjournaled(settings, user)  # a direct write stored rows the journal lacks
        tables = [t for seg in inbox.segments(settings, user)
                  if seg.stem in covered and (t := inbox.read(seg)) is not None]
        waiting = sum(t.num_rows for t in tables)
        chars = sum(pc.sum(pc.utf8_length(t["content"])).as_py() or 0 for t in tables)
        if waiting < settings.inbox_publish_rows and chars < INBOX_PUBLISH_CHARS and not missed:
            continue
        with db.open_store_if_free(settings) as con:
            if con is None:
                return done
            written = write_tenant(settings, con, user, embedder.model, embedder.dim, tables=("episodes",))
        if written["episodes"].get("written"):
            inbox.remove(settings, user, covered)
            if missed:
                inbox.clear_unjournaled(settings, user)
            done += 1
    return done


def embed_inbox(settings: Settings, embedder: Embedder, stop: Callable[[], bool] | None = None) -> int:
    """Embed the pending inbox segments that have no vectors yet and keep the vectors beside each (no
    store needed): a reader that finds the store held finds these episodes by meaning, and the fold
    stores them embedded. Returns the rows embedded.

    An agent writes one segment per add, so segments are embedded together, about embed_batch_size
    texts per model run: one run per segment cost the cores the agents' searches share ~5 ms each.
    """
    model, dim = embedder.model, embedder.dim
    waiting = [(seg, rows) for user in inbox.tenants(settings) for seg in inbox.segments(settings, user)
               if not seg.folded and not seg.vectors_path(model, dim).exists()
               and (rows := inbox.read(seg)) is not None and rows.num_rows
               and not all(inbox.written_with_vectors(rows, model, dim))]
    done = 0
    for batch in segment_batches(waiting, settings.embed_batch_size):
        if stop is not None and stop():
            return done
        texts = [text for _, rows in batch for text in rows["content"].to_pylist()]
        vectors = l2_normalize(validate_vectors(np.asarray(embedder.embed(texts), np.float32), dim))
        for seg, rows in batch:
            inbox.write_vectors(seg, model, dim, vectors[:rows.num_rows])
            vectors = vectors[rows.num_rows:]
        done += len(texts)
    return done


def segment_batches(waiting: list[tuple[Any, Any]], size: int) -> Iterator[list[tuple[Any, Any]]]:
    """Consecutive (segment, rows) pairs grouped into batches of about `size` rows; a segment is never
    split (its vectors are one file), so one larger than `size` is a batch of its own."""
    batch: list[tuple[Any, Any]] = []
    rows = 0
    for item in waiting:
        if batch and rows + item[1].num_rows > size:
            yield batch
            batch, rows = [], 0
        batch.append(item)
        rows += item[1].num_rows
    if batch:
        yield batch


def watch(
    settings: Settings,
    embedder: Embedder,
    *,
    poll_s: float | None = None,
    max_seconds: float | None = None,
    once: bool = False,
    stop: threading.Event | None = None,
    drain_pass: Pass | None = None,
    on_pass: Callable[[dict[str, int]], None] | None = None,
    logger: Any = log,
) -> dict[str, int]:
    """Run passes until `stop` is set, `max_seconds` have passed or (`once`) after one; returns the totals.

    `drain_pass` replaces drain_once (the Prefect flow passes its task); `on_pass` sees each pass's counts.
    """
    poll_s = settings.embed_poll_s if poll_s is None else poll_s
    stop = stop or threading.Event()
    if once:
        return _watch(settings, embedder, poll_s, max_seconds, once, stop, drain_pass, on_pass, logger)
    with watched(settings):
        return _watch(settings, embedder, poll_s, max_seconds, once, stop, drain_pass, on_pass, logger)


@contextmanager
def watched(settings: Settings) -> Iterator[None]:
    """Keep every store file's worker mark fresh while the block runs (a thread touching them every
    hot_path.HEARTBEAT_S, whatever a pass takes), and remove the marks after it."""
    done = threading.Event()

    def touch() -> None:
        for store in all_shard_settings(settings):
            hot_path.touch_worker_mark(store)

    def beat() -> None:
        while not done.wait(hot_path.HEARTBEAT_S):
            touch()

    touch()  # marked before the first pass

    thread = threading.Thread(target=beat, name="engram-worker-mark", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        for store in all_shard_settings(settings):
            hot_path.clear_worker_mark(store)


def _watch(settings: Settings, embedder: Embedder, poll_s: float, max_seconds: float | None, once: bool,
           stop: threading.Event, drain_pass: Pass | None, on_pass: Callable[[dict[str, int]], None] | None,
           logger: Any) -> dict[str, int]:
    run_pass = drain_pass or (lambda s, e: drain_once(s, e, stop=stop.is_set))
    totals = {"episodes": 0, "facts": 0, "locked": 0, "inbox_embedded": 0, "republished": 0, "passes": 0}
    start = time.monotonic()
    was_locked = False
    told: set[tuple[str, str]] = set()
    while True:
        counts = run_pass(settings, embedder)
        for notice in inbox_notices.take():  # a quarantined segment, refused records: once each
            if (notice.kind, notice.path) not in told:
                told.add((notice.kind, notice.path))
                logger.warning("embedding worker: %s", notice.line())
        totals["passes"] += 1
        for key in ("episodes", "facts", "locked", "inbox_embedded", "republished"):
            totals[key] += counts.get(key, 0)
        if counts.get("episodes") or counts.get("facts"):
            logger.info("embedding worker: embedded %d episode(s), %d fact(s)", counts["episodes"], counts["facts"])
        if counts.get("locked"):  # one line per pass; a warning only when the lock starts
            (logger.info if was_locked else logger.warning)(
                "embedding worker: %d store(s) locked by another process (the nightly run?); "
                "trying again in %.1f s", counts["locked"], poll_s)
        was_locked = bool(counts.get("locked"))
        if on_pass is not None:
            on_pass(counts)
        left = None if max_seconds is None else max_seconds - (time.monotonic() - start)
        if once or stop.is_set() or (left is not None and left <= 0):
            return totals
        if stop.wait(poll_s if left is None else min(poll_s, left)):
            return totals


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGTERM or SIGINT (a second SIGINT interrupts at once); handlers restored after."""
    stop = threading.Event()

    def handle(signum: int, frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        log.info("embedding worker: %s, stopping after the current batch", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
