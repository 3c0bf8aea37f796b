"""Prefect tasks for the archive: thin wrappers over engram.archive.ops (each opens its own connections)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from engram.archive import nightly
from engram.archive import ops as archive
from engram.archive.restore import restore
from engram.settings import Settings


@task(name="list-removal-candidates", cache_policy=NO_CACHE)
def list_candidates(settings: Settings, user_id: str | None, table: str | None, status: str | None,
                    older_than_days: int | None, as_of: datetime | None, sample: int) -> dict[str, Any]:
    """Counts and sample ids of the rows due for the archive."""
    return archive.list_removal_candidates(settings, user_id=user_id, table=table, status=status,
                                           older_than_days=older_than_days, as_of=as_of, sample=sample)


@task(name="mark-removal", cache_policy=NO_CACHE)
def mark_rows(settings: Settings, user_id: str, ids: list[str], table: str, reason: str,
              dry_run: bool) -> dict[str, Any]:
    """Set status 'removal' on the given facts or episodes."""
    return archive.mark_removal(settings, user_id, ids, table=table, reason=reason, dry_run=dry_run)


@task(name="export-removals", retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE)
def export_rows(settings: Settings, user_id: str | None, table: str | None, status: str | None,
                older_than_days: int | None, as_of: datetime | None, run_id: str | None,
                dry_run: bool) -> dict[str, Any]:
    """Write the due rows to new verified parquet files."""
    return archive.export_removals(settings, user_id=user_id, table=table, status=status,
                                   older_than_days=older_than_days, as_of=as_of, run_id=run_id, dry_run=dry_run)


@task(name="finalize-removal", retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE)
def finalize_rows(settings: Settings, user_id: str | None, run_id: str | None, export_ids: list[str] | None,
                  dry_run: bool) -> dict[str, Any]:
    """Remove the rows of verified exports from the live tables."""
    return archive.finalize_removal(settings, user_id=user_id, run_id=run_id, export_ids=export_ids,
                                    dry_run=dry_run)


@task(name="abandon-exports", cache_policy=NO_CACHE)
def abandon(settings: Settings, export_ids: list[str], dry_run: bool) -> dict[str, Any]:
    """Give up pending exports; their rows stay live."""
    return archive.abandon_exports(settings, export_ids, dry_run=dry_run)


@task(name="restore-archived", retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE)
def restore_rows(settings: Settings, user_id: str, table: str | None, ids: list[str] | None,
                 from_run_id: str | None, dry_run: bool) -> dict[str, Any]:
    """Bring archived rows back into the live tables (idempotent)."""
    return restore(settings, user_id, table=table, ids=ids, export_run_id=from_run_id, dry_run=dry_run)


@task(name="archive-due", retries=1, retry_delay_seconds=10, cache_policy=NO_CACHE)
def archive_due(settings: Settings, user_id: str | None, as_of: datetime, run_id: str,
                dry_run: bool) -> dict[str, int]:
    """Export, verify and finalize everything past retention."""
    return nightly.archive_due(settings, user_id, as_of, run_id, dry_run=dry_run)
