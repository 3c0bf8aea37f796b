"""The nightly consolidation flow: embed, extract, confidence, merge, resolve, deprecate, archive, publish."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from prefect import flow, get_run_logger

from engram.consolidate.report import utc_naive
from engram.consolidate.stages import choose_stages, tenants_with_work
from engram.flows.artifacts import publish_run_artifacts
from engram.settings import load_settings
from engram.store.db import held_open
from engram.store.runs import (
    LeaseHeld,
    error_text,
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
    logger.info("run %s: %d tenant(s), stages %s, dry_run=%s", run_id, len(tenants), chosen, dry_run)
    results: dict[str, Any] = {}
    for tenant in tenants:
        shard = settings_for_tenant(settings, tenant)  # the tenant's shard file (db_path when unsharded)
        try:
            with held_open(shard), tenant_lease(shard, tenant, run_id):  # one open store per tenant
                results[tenant] = run_steps(shard, tenant, run_id, as_of, {
                    stage: partial(STAGE_TASKS[stage], shard, tenant, run_id, as_of, dry_run) for stage in chosen
                }, dry_run)
        except LeaseHeld as exc:
            logger.warning("skipped tenant %s: %s", tenant, exc)
            results[tenant] = {"skipped": str(exc)}
        except Exception as exc:  # noqa: BLE001 - any failure is the tenant's alone: recorded, the others go on
            logger.error("tenant %s failed: %s", tenant, error_text(exc))
            results[tenant] = tenant_failure(exc)
    if batch_mode:  # one job for every tenant's LLM work of this run, collected by the next run
        batch["submit"] = llm_batch.submit_llm_batch(settings, run_id, as_of, user_id)
    snapshot = publish_read_snapshot(settings, run_id, dry_run, results)
    publish_run_artifacts(run_id, as_of, dry_run, results, batch or None)
    out = {"run_id": run_id, "as_of": as_of.isoformat(), "dry_run": dry_run, "tenants": results,
           "snapshot": snapshot}
    return {**out, "llm_batch": batch} if batch else out


if __name__ == "__main__":
    nightly_consolidation()
