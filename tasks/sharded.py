"""Prefect task for the sharded nightly run: one shard's tenants, consolidated one after another."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from engram.consolidate import shards as sharding
from engram.settings import Settings


@task(name="consolidate-shard", retries=1, retry_delay_seconds=[30], cache_policy=NO_CACHE)
def consolidate_shard(settings: Settings, shard: int, run_id: str, as_of: datetime, stages: list[str],
                      dry_run: bool, hold_open: bool = True) -> dict[str, Any]:
    """Every tenant with work in one shard file, sequentially (a retry resumes at the first unfinished stage)."""
    return sharding.consolidate_shard(settings, shard, run_id, as_of, stages, dry_run, hold_open=hold_open)
