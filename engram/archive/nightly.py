"""The archive's nightly entry point: finish interrupted work, export what is due, verify, finalize."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from engram import clock
from engram.archive.ops import (
    EXPORT_ORDER,
    RETIRED,
    ArchiveIntegrityError,
    export_removals,
    finalize_removal,
    list_removal_candidates,
)
from engram.settings import Settings
from engram.store import db


def archive_due(
    settings: Settings, user_id: str | None, as_of: datetime, run_id: str, dry_run: bool = False
) -> dict[str, int]:
    """Export, verify and finalize everything due (finishing interrupted work first); safe every night."""
    if dry_run:
        found = list_removal_candidates(settings, user_id=user_id, as_of=as_of, sample=0)
        return {f"due_{t}": int(found["counts"].get(t, 0)) for t in EXPORT_ORDER} | {
            "pending_exports": int(found["pending_exports"])}
    if user_id is not None and not _has_work(settings, user_id, as_of):
        # most tenants have nothing to archive on most nights: one query instead of ~10 manifest and due-row reads
        return _nightly_counts({"rows": {}, "files": []}, {}, {})
    refused: ArchiveIntegrityError | None = None
    try:
        resumed = finalize_removal(settings, user_id=user_id, finalize_run_id=run_id)["rows"]
    except ArchiveIntegrityError as exc:  # other tenants still get archived; raised at the end
        refused, resumed = exc, {}
    exported = export_removals(settings, user_id=user_id, as_of=as_of, run_id=run_id)
    finalized = finalize_removal(settings, user_id=user_id, run_id=run_id, finalize_run_id=run_id)["rows"]
    if refused:
        raise refused
    return _nightly_counts(exported, finalized, resumed)


def _has_work(settings: Settings, user_id: str, as_of: datetime) -> bool:
    """Whether the tenant has a retired row due, an export to finalize, or any interrupted export."""
    with db.open_store(settings) as con:
        [(has_work,)] = db.rows(
            con, "queries/archive/archive_has_work", user_id=user_id, fact_statuses=list(RETIRED["facts"]),
            episode_statuses=list(RETIRED["episodes"]),
            cutoff=clock.naive_utc_or_now(as_of) - timedelta(days=settings.retention_days))
    return bool(has_work)


def _nightly_counts(exported: dict[str, Any], finalized: dict[str, int], resumed: dict[str, int]) -> dict[str, int]:
    counts = {f"exported_{t}": int(exported["rows"].get(t, 0)) for t in EXPORT_ORDER}
    counts |= {f"archived_{t}": int(finalized.get(t, 0) + resumed.get(t, 0)) for t in EXPORT_ORDER}
    counts["files"] = len(exported["files"])
    counts["resumed_rows"] = int(sum(resumed.values()))
    return counts
