"""Consolidating a shard: its tenants one after another through the runner (store/sharding only routes)."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from engram import embed
from engram import llm as llms
from engram.consolidate.runner import Tools, consolidate_tenants, tenants_with_work
from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store.sharding import all_shard_settings, shard_of, shard_settings

log = logging.getLogger(__name__)


def tenants_with_work_all(settings: Settings, as_of: datetime) -> list[str]:
    """Tenants with nightly work on any shard (tenants_with_work fanned out)."""
    return sorted(u for s in all_shard_settings(settings, existing_only=True) for u in tenants_with_work(s, as_of))


def consolidate_shard(
    settings: Settings, k: int, run_id: str, as_of: datetime, stages: list[str], dry_run: bool = False,
    user_ids: list[str] | None = None, hold_open: bool = True,
) -> dict[str, Any]:
    """Consolidate the tenants with work in shard k (or `user_ids`), one after another, each under its lease.

    Only shard k's file is opened, so two workers given different shards never share a file. With
    hold_open the shard stays open across its tenants, reopened every hold_store_max_s (a checkpoint):
    the stages' short connections share the open database instead of reopening the file each time, at
    the price of locking other processes out of this shard meanwhile.
    """
    shard = shard_settings(settings, k)
    if settings.shards > 1 and not Path(shard.db_path).exists():
        return {}
    wrong = [u for u in user_ids or [] if shard_of(u, settings.shards) != k]
    if wrong:
        raise InvalidInput(f"user_ids: {len(wrong)} tenant(s) do not belong to shard {k}")
    if not hold_open:
        shard = shard.model_copy(update={"hold_store_open": False})
    tools = Tools(embed.from_settings(shard), llms.from_settings(shard))
    batch = None if dry_run else llms.batch_from_settings(shard)  # batch mode: one job per shard file
    if batch is not None:
        from engram.consolidate.batch import collect_batches

        log.info("shard %d: llm batch collect %s", k, collect_batches(shard, batch, run_id, as_of, tools.embedder))
    results = consolidate_tenants(shard, run_id, as_of, stages, user_ids, dry_run, tools)
    if batch is not None:
        from engram.consolidate.batch import submit_batch

        log.info("shard %d: llm batch submit %s", k, submit_batch(shard, batch, run_id, as_of))
    log.info("shard %d: %d tenant(s) consolidated", k, len(results))
    return results
