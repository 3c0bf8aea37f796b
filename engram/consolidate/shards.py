"""Consolidating a shard: its tenants one after another, each under its lease (store/sharding only routes)."""

from __future__ import annotations

import logging
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

from engram import embed
from engram import llm as llms
from engram.consolidate.stages import run_tenant, tenants_with_work
from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store import db
from engram.store.runs import LeaseHeld, error_text, tenant_failure
from engram.store.sharding import all_shard_settings, shard_of, shard_settings

log = logging.getLogger(__name__)


def tenants_with_work_all(settings: Settings, as_of: datetime) -> list[str]:
    """Tenants with nightly work on any shard (tenants_with_work fanned out)."""
    return sorted(u for s in all_shard_settings(settings, existing_only=True) for u in tenants_with_work(s, as_of))


def consolidate_shard(
    settings: Settings, k: int, run_id: str, as_of: datetime, stages: list[str], dry_run: bool = False,
    user_ids: list[str] | None = None, hold_open: bool = True,
) -> dict[str, Any]:
    """Consolidate the tenants with work in shard k, one after another, each under its lease.

    Only shard k's file is opened, so two workers given different shards never share a file.
    A tenant whose lease another run holds is reported as skipped; the other tenants go on.
    hold_open keeps one connection open for the whole shard: the stages' own short connections
    then share the open database instead of reopening and checkpointing the file each time
    (about 4x faster per tenant here), at the price of locking other processes out of this
    shard until it is done.
    """
    shard = shard_settings(settings, k)
    if settings.shards > 1 and not Path(shard.db_path).exists():
        return {}
    tenants = user_ids if user_ids is not None else tenants_with_work(shard, as_of)
    wrong = [u for u in tenants if shard_of(u, settings.shards) != k]
    if wrong:
        raise InvalidInput(f"user_ids: {len(wrong)} tenant(s) do not belong to shard {k}")
    embedder, llm = embed.from_settings(shard), llms.from_settings(shard)
    results: dict[str, Any] = {}
    with db.held_open(shard) if hold_open else nullcontext():
        for tenant in tenants:
            try:
                results[tenant] = run_tenant(shard, tenant, run_id, as_of, stages, dry_run, embedder=embedder, llm=llm)
            except LeaseHeld as exc:
                log.warning("shard %d: skipped a tenant whose lease is held: %s", k, exc.code)
                results[tenant] = {"skipped": str(exc)}
            except Exception as exc:  # noqa: BLE001 - run_tenant recorded it on the tenant's runs row
                log.error("shard %d: a tenant failed: %s", k, error_text(exc))
                results[tenant] = tenant_failure(exc)
    log.info("shard %d: %d tenant(s) consolidated", k, len(results))
    return results
