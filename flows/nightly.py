"""The nightly consolidation flow: embed, extract, confidence, merge, resolve, deprecate, archive, publish."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from prefect import flow, get_run_logger

from engram.consolidate.report import utc_naive
from engram.consolidate.stages import choose_stages, tenants_with_work
from engram.flows.artifacts import publish_run_artifacts
from engram.settings import Settings, load_settings
from engram.store.db import StoreHold, held_open
from engram.store.runs import (
    LeaseHeld,
    error_text,
    failed_tenants,
    make_run_id,
    run_steps,
    tenant_failure,
    tenant_lease,
)
from engram.store.sharding import settings_for_tenant
from engram.tasks import consolidate as t
from engram.tasks import llm_batch
from engram.tasks.snapshot import publish_read_snapshot

STAGE_TASKS = {
    "embed": t.embed_pending,
    "extract": t.extract_facts,
    "confidence": t.update_confidence,
    "merge": t.merge_duplicates,
    "resolve": t.resolve_reviews,
    "deprecate": t.deprecate_facts,
    "archive": t.archive_retired,
    "publish": t.publish_run,
}


@flow(name="nightly-consolidation", log_prints=False)
def nightly_consolidation(
    user_id: str | None = None,
    as_of: datetime | None = None,
    dry_run: bool = False,
    stages: list[str] | None = None,
) -> dict[str, Any]:
    """Consolidate one tenant (or every tenant with work): episodes become confident, deduplicated facts."""
    logger = get_run_logger()
    settings = load_settings()
    as_of = utc_naive(as_of or datetime.now(UTC))
    chosen = choose_stages(stages)
    if user_id is None and (settings.shards > 1 or settings.dask_address or settings.task_runner == "dask"):
        from engram.flows.sharded import (
            run_sharded_nightly,  # one task per shard file (engram/sharding.py)
        )

        return run_sharded_nightly(settings, as_of=as_of, dry_run=dry_run, stages=chosen)
    run_id = make_run_id(as_of)
    batch_mode = settings.llm_mode == "batch" and settings.llm != "none" and not dry_run
    batch: dict[str, Any] = {}
    if batch_mode:  # last run's job first: its decisions and facts feed this run's stages
        batch["collect"] = llm_batch.collect_llm_batches(settings, run_id, as_of)
    tenants = [user_id] if user_id else tenants_with_work(settings, as_of)
    logger.info("run %s: %d tenant(s), stages %s, dry_run=%s, one task per %s", run_id, len(tenants), chosen,
                dry_run, settings.nightly_tasks)
    results: dict[str, Any] = {}
    store = settings_for_tenant(settings, user_id) if user_id else settings  # unsharded here: one file
    with StoreHold(store, settings.hold_store_max_s) as hold:  # one open of the file per few seconds of tenants
        for tenant in tenants:
            try:
                results[tenant] = consolidate_one(store, tenant, run_id, as_of, chosen, dry_run)
            except LeaseHeld as exc:
                logger.warning("skipped tenant %s: %s", tenant, exc)
                results[tenant] = {"skipped": str(exc)}
            except Exception as exc:  # noqa: BLE001 - any failure is the tenant's alone: recorded, the others go on
                logger.error("tenant %s failed: %s", tenant, error_text(exc))
                results[tenant] = tenant_failure(exc)
            hold.renew(force="failed" in results[tenant])  # the next tenant never inherits a broken open store
    if batch_mode:  # one job for every tenant's LLM work of this run, collected by the next run
        batch["submit"] = llm_batch.submit_llm_batch(settings, run_id, as_of, user_id)
    snapshot = publish_read_snapshot(settings, run_id, dry_run, failed_tenants(results))
    publish_run_artifacts(run_id, as_of, dry_run, results, batch or None)
    out = {"run_id": run_id, "as_of": as_of.isoformat(), "dry_run": dry_run, "tenants": results,
           "snapshot": snapshot}
    return {**out, "llm_batch": batch} if batch else out


def consolidate_one(settings: Settings, tenant: str, run_id: str, as_of: datetime, stages: list[str],
                    dry_run: bool) -> dict[str, Any]:
    """One tenant: one consolidate-tenant task, or (ENGRAM_NIGHTLY_TASKS=stage) one task per stage."""
    if settings.nightly_tasks == "tenant":
        return t.consolidate_tenant(settings, tenant, run_id, as_of, stages, dry_run)
    with held_open(settings), tenant_lease(settings, tenant, run_id):
        return run_steps(settings, tenant, run_id, as_of, {
            stage: partial(STAGE_TASKS[stage], settings, tenant, run_id, as_of, dry_run) for stage in stages
        }, dry_run)


if __name__ == "__main__":
    nightly_consolidation()
