"""Prefect task publishing the read snapshot analysts and `engram sql` query."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from engram.settings import Settings
from engram.store.snapshot import publish_after_run


@task(name="publish-snapshot", cache_policy=NO_CACHE)
def publish_read_snapshot(settings: Settings, run_id: str, dry_run: bool, results: dict[str, Any]) -> dict[str, Any]:
    """Export the analyst views to a new snapshot directory and switch `current` to it (not on a dry run)."""
    return publish_after_run(settings, run_id, dry_run, results)
