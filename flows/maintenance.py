"""Maintenance flows of the archive, one per operation, each with its parameters in the Prefect UI."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from engram import clock
from engram.settings import load_settings
from engram.tasks import archive as t


def _report(operation: str, result: Any) -> None:
    """A markdown artifact with the operation's result (counts and ids, never memory text)."""
    create_markdown_artifact(
        key=operation,
        markdown=f"# {operation}\n\n```json\n{json.dumps(result, default=str, indent=2)[:50_000]}\n```\n",
        description=f"engram {operation}",
    )


@flow(name="list-removal-candidates")
def list_removal_candidates_flow(
    user_id: str | None = None,
    table: str | None = None,
    status: str | None = None,
    older_than_days: int | None = None,
    as_of: datetime | None = None,
    sample: int = 5,
) -> dict[str, Any]:
    """List what the archive would take now: counts per table, tenant and status, and sample ids."""
    settings = load_settings()
    result = t.list_candidates(settings, user_id, table, status, older_than_days, as_of, sample)
    _report("removal-candidates", result)
    return result


@flow(name="mark-removal")
def mark_removal_flow(
    user_id: str, ids: list[str], table: str = "facts", reason: str = "marked for removal by hand",
    dry_run: bool = False,
) -> dict[str, Any]:
    """Mark facts or episodes for removal; the archive takes them once retention has passed."""
    result = t.mark_rows(load_settings(), user_id, ids, table, reason, dry_run)
    _report("mark-removal", result)
    return result


@flow(name="export-removals")
def export_removals_flow(
    user_id: str | None = None,
    table: str | None = None,
    status: str | None = None,
    older_than_days: int | None = None,
    as_of: datetime | None = None,
    run_id: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Write the rows due to new verified parquet files; the live tables stay untouched."""
    settings = load_settings()
    result = t.export_rows(settings, user_id, table, status, older_than_days, as_of, run_id, dry_run)
    _report("export-removals", result)
    return result


@flow(name="finalize-removal")
def finalize_removal_flow(
    user_id: str | None = None,
    run_id: str | None = None,
    export_ids: list[str] | None = None,
    abandon: bool = False,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Remove from the live tables the rows of verified exports (or abandon the given exports)."""
    settings = load_settings()
    if abandon:
        result = t.abandon(settings, export_ids or [], dry_run)
    else:
        result = t.finalize_rows(settings, user_id, run_id, export_ids, dry_run)
    _report("finalize-removal", result)
    return result


@flow(name="restore-archived")
def restore_flow(
    user_id: str,
    table: str | None = None,
    ids: list[str] | None = None,
    from_run_id: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Bring archived rows of a tenant back into the live tables (idempotent)."""
    result = t.restore_rows(load_settings(), user_id, table, ids, from_run_id, dry_run)
    _report("restore", result)
    return result


@flow(name="archive-retention")
def archive_retention_flow(
    user_id: str | None = None, as_of: datetime | None = None, run_id: str | None = None, dry_run: bool = False,
) -> dict[str, int]:
    """Export, verify and finalize everything past retention (what the nightly run does at its end)."""
    as_of = clock.naive_utc_or_now(as_of)
    result = t.archive_due(load_settings(), user_id, as_of, run_id or clock.run_id("retention", as_of), dry_run)
    _report("archive-retention", result)
    return result


if __name__ == "__main__":
    archive_retention_flow()
