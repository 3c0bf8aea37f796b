"""The sharded nightly flow: one consolidate-shard task per shard file, on threads or a Dask cluster."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import flow, get_run_logger, unmapped
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from engram import clock
from engram.consolidate.runner import choose_stages, failed_tenants
from engram.errors import InvalidInput
from engram.flows.artifacts import publish_run_artifacts
from engram.priority import yield_cpu
from engram.settings import Settings, load_settings
from engram.store.runs import make_run_id
from engram.tasks.sharded import consolidate_shard
from engram.tasks.snapshot import publish_read_snapshot


def task_runner_for(settings: Settings) -> TaskRunner:
    """Dask at ENGRAM_DASK_ADDRESS (or a temporary local cluster when ENGRAM_TASK_RUNNER=dask), else threads."""
    if settings.dask_address or settings.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=settings.dask_address) if settings.dask_address else DaskTaskRunner()
    return ThreadPoolTaskRunner(max_workers=max(1, min(settings.shards, 8)))


@flow(name="sharded-nightly", log_prints=False)
def sharded_nightly(
    as_of: datetime | None = None,
    dry_run: bool = False,
    stages: list[str] | None = None,
    shards: list[int] | None = None,
    hold_shard_open: bool = True,
) -> dict[str, Any]:
    """Consolidate every tenant with work, one task per shard (a shard's tenants run in order, never two writers)."""
    logger = get_run_logger()
    settings = load_settings()
    yield_cpu(settings.background_nice)  # the agents' searches and writes first (Dask workers are their own)
    as_of = clock.naive_utc_or_now(as_of)
    chosen = choose_stages(stages)
    picked = list(range(settings.shards)) if shards is None else sorted(set(shards))
    if any(not 0 <= k < settings.shards for k in picked):
        raise InvalidInput(f"shards: each must be in 0..{settings.shards - 1}")
    run_id = make_run_id(as_of)
    logger.info("run %s: %d shard(s) of %d, stages %s, dry_run=%s", run_id, len(picked), settings.shards,
                chosen, dry_run)
    futures = consolidate_shard.map(unmapped(settings), picked, unmapped(run_id), unmapped(as_of),
                                    unmapped(chosen), unmapped(dry_run), unmapped(hold_shard_open))
    results: dict[str, Any] = {}
    for future in futures:
        results.update(future.result())
    results = dict(sorted(results.items()))
    snapshot = publish_read_snapshot(settings, run_id, dry_run, failed_tenants(results))
    publish_run_artifacts(run_id, as_of, dry_run, results)
    return {"run_id": run_id, "as_of": as_of.isoformat(), "dry_run": dry_run, "shards": picked, "tenants": results,
            "snapshot": snapshot}


def run_sharded_nightly(settings: Settings | None = None, **params: Any) -> dict[str, Any]:
    """Run sharded_nightly with the task runner the settings choose."""
    settings = settings or load_settings()
    return sharded_nightly.with_options(task_runner=task_runner_for(settings))(**params)


if __name__ == "__main__":
    run_sharded_nightly()
