"""Run bookkeeping: stage records (for resume and reports) and per-tenant leases."""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from engram import clock
from engram.errors import EngramError, StoreMissing
from engram.store import db

log = logging.getLogger(__name__)


class LeaseHeld(EngramError):
    """Another consolidation run holds this tenant."""

    code = "lease_held"


def make_run_id(as_of: datetime) -> str:
    """A nightly run's id, derived from as_of: a re-run for the same as_of resumes the same run."""
    return clock.run_id("run", as_of, key=as_of.isoformat())


def holder_id() -> str:
    """Who holds a lease: host and pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


def completed_counts(con: db.Connection, run_id: str, user_id: str, stage: str) -> dict[str, Any] | None:
    """The counts of a stage this run already completed for the tenant, else None."""
    found = db.rows(con, "queries/store/stage_run", run_id=run_id, user_id=user_id, stage=stage)
    if found and found[0][0] == "completed":
        return json.loads(found[0][1]) if found[0][1] else {}
    return None


def record_stage(
    con: db.Connection,
    run_id: str,
    user_id: str,
    stage: str,
    as_of: datetime,
    started_at: datetime,
    counts: dict[str, Any],
    status: str = "completed",
    watermark: datetime | None = None,
    error: str | None = None,
) -> None:
    """Write (or replace) the stage's runs row, keeping its LLM usage (inside the stage's own write transaction)."""
    finished = clock.now()
    row = dict(run_id=run_id, user_id=user_id, stage=stage, status=status, as_of=as_of, started_at=started_at,
               finished_at=finished, watermark=watermark, counts=json.dumps(counts, default=str),
               duration_ms=(finished - started_at).total_seconds() * 1000, error=error)
    # the first record of a stage (most of them) is one statement; an update only when a row was there
    # (a failed attempt, or LLM usage recorded while the stage ran)
    if not db.rows(con, "queries/store/insert_stage_run_if_absent", **row)[0][0]:
        db.execute(con, "queries/store/update_stage_run", **row)


def _holder_is_dead(holder: str) -> bool:
    """True when the holder ran on this host and its process no longer exists."""
    host, _, pid = holder.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _take_lease(con: db.Connection, user_id: str, run_id: str, holder: str, now: datetime, ttl: timedelta) -> bool:
    """Take the tenant's lease in one statement; False when another live holder has it."""
    return bool(db.rows(con, "queries/store/take_lease", user_id=user_id, run_id=run_id, holder=holder,
                        now=now, expires_at=now + ttl))


def _take_over_dead(con: db.Connection, user_id: str, run_id: str, holder: str, now: datetime,
                    ttl: timedelta) -> bool:
    """Take the lease from a holder that was killed on this host (kill -9, OOM): its lease is void."""
    current = db.rows(con, "queries/store/lease_holder", user_id=user_id)
    if not current or not _holder_is_dead(current[0][0]):
        return False
    with db.transaction(con):
        db.execute(con, "queries/store/release_lease", user_id=user_id, holder=current[0][0])
        return _take_lease(con, user_id, run_id, holder, now, ttl)


@contextmanager
def tenant_lease(settings: Any, user_id: str, run_id: str, ttl: timedelta = timedelta(hours=2)) -> Iterator[None]:
    """Hold the tenant's consolidation lease for the block; LeaseHeld if another live run has it."""
    holder = holder_id()
    now = clock.now()
    with db.open_store(settings) as con:
        if not _take_lease(con, user_id, run_id, holder, now, ttl) and not _take_over_dead(
                con, user_id, run_id, holder, now, ttl):
            other = (db.rows(con, "queries/store/lease_holder", user_id=user_id) or [("?", "?", "?")])[0]
            raise LeaseHeld(f"tenant {user_id} is being consolidated by {other[0]} (run {other[1]}) until {other[2]}")
    try:
        yield
    finally:
        with db.open_store(settings) as con:
            db.execute(con, "queries/store/release_lease", user_id=user_id, holder=holder)


def error_text(exc: BaseException, limit: int = 2000) -> str:
    """One line naming the error type and its message, capped for a runs row."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def record_failure(settings: Any, run_id: str, user_id: str, stage: str, as_of: datetime, started: datetime,
                   exc: BaseException) -> None:
    """Mark the tenant's stage failed (status failed + error) in its own connection; never raises.

    A failed stage is not 'completed', so a re-run of the same run id, or the next night, runs it again.
    """
    try:
        with db.open_store(settings) as con, db.transaction(con):
            record_stage(con, run_id, user_id, stage, as_of, started, {}, status="failed", error=error_text(exc))
    except StoreMissing:  # removed under the run: nothing to record in, and the caller reports it
        return
    except Exception as inner:  # the store itself may be what failed: the error still reaches the caller
        log.error("could not record the failure of stage %s for tenant %s: %s", stage, user_id, error_text(inner),
                  exc_info=log.isEnabledFor(logging.DEBUG))


def recorded_stages(con: db.Connection, run_id: str, user_id: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each stage this run already recorded for the tenant: stage -> (status, counts)."""
    return {stage: (status, json.loads(counts) if counts else {})
            for stage, status, counts in db.rows(con, "queries/store/tenant_run_stages", run_id=run_id, user_id=user_id)}
