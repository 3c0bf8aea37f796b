"""The nightly consolidation flow: embed, extract, confidence, merge, digest, resolve, deprecate, archive, publish."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import flow, get_run_logger

from engram import clock
from engram import embed as embedders
from engram import llm as llms
from engram.consolidate.runner import (
    TenantRun,
    Tools,
    choose_stages,
    consolidate_tenants,
    failed_tenants,
    run_tenant,
)
from engram.flows.artifacts import publish_run_artifacts
from engram.priority import yield_cpu
from engram.settings import Settings, load_settings
from engram.store.runs import make_run_id
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id
from engram.tasks import llm_batch
from engram.tasks.consolidate import consolidate_tenant, stage_task
from engram.tasks.snapshot import publish_read_snapshot


@flow(name="nightly-consolidation", log_prints=False)
def nightly_consolidation(
    user_id: str | None = None,
    as_of: datetime | None = None,
    dry_run: bool = False,
    stages: list[str] | None = None,
) -> dict[str, Any]:
    """Consolidate one tenant (or every tenant with work): episodes become confident, deduplicated facts."""
    as_of = clock.run_as_of(as_of, option="as_of")  # first: an out-of-range as_of fails no tenant
    logger = get_run_logger()
    settings = load_settings()
    yield_cpu(settings.background_nice)  # the agents' searches and writes first
    user_id = None if user_id is None else normalise_user_id(user_id)
    chosen = choose_stages(stages)
    if user_id is None and (settings.shards > 1 or settings.dask_address or settings.task_runner == "dask"):
        from engram.flows.sharded import run_sharded_nightly  # one task per shard file

        return run_sharded_nightly(settings, as_of=as_of, dry_run=dry_run, stages=chosen)
    run_id = make_run_id(as_of)
    batch_mode = settings.llm_mode == "batch" and settings.llm != "none" and not dry_run
    batch: dict[str, Any] = {}
    if batch_mode:  # last run's job first: its decisions and facts feed this run's stages
        batch["collect"] = llm_batch.collect_llm_batches(settings, run_id, as_of)
    logger.info("run %s: stages %s, dry_run=%s, one task per %s", run_id, chosen, dry_run, settings.nightly_tasks)
    store = for_tenant(settings, user_id) if user_id else settings
    tools = Tools(embedders.from_settings(settings), llms.from_settings(settings))
    results = consolidate_tenants(store, run_id, as_of, chosen, [user_id] if user_id else None, dry_run, tools,
                                  run=_tenant_runner(settings, run_id, as_of, chosen), logger=logger)
    if batch_mode:  # one job for every tenant's LLM work of this run, collected by the next run
        batch["submit"] = llm_batch.submit_llm_batch(settings, run_id, as_of, user_id)
    snapshot = publish_read_snapshot(settings, run_id, dry_run, failed_tenants(results))
    publish_run_artifacts(run_id, as_of, dry_run, results, batch or None)
    out = {"run_id": run_id, "as_of": as_of.isoformat(), "dry_run": dry_run, "tenants": results,
           "snapshot": snapshot}
    return {**out, "llm_batch": batch} if batch else out


def _tenant_runner(settings: Settings, run_id: str, as_of: datetime, stages: list[str]) -> TenantRun:
    """How the flow runs a tenant: one consolidate-tenant task, or (ENGRAM_NIGHTLY_TASKS=stage) run_tenant with
    one task per stage, each named after its stage."""
    if settings.nightly_tasks == "tenant":
        return lambda store, tenant, tools: consolidate_tenant(store, tenant, run_id, as_of, stages, tools)
    return lambda store, tenant, tools: run_tenant(
        store, tenant, run_id, as_of, stages, tools, call=lambda stage, step: stage_task(stage, tenant)(stage, step))


if __name__ == "__main__":
    nightly_consolidation()
