"""Prefect tasks of the nightly stages: one per tenant, or one per stage, both over engram.consolidate.runner."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from prefect import Task, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import TaskRun
from prefect.states import State

from engram.consolidate.context import StageResult
from engram.consolidate.runner import Tools, run_tenant, tenant_summary
from engram.errors import StoreMissing
from engram.settings import Settings
from engram.store.runs import LeaseHeld

# a stage that calls the LLM gets more patience than one that only reads and writes the store
STAGE_RETRIES = {"resolve": [2, 10, 30], "extract": [5, 30], "embed": [5, 30]}


def _worth_retrying(task: Task[Any, Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Another live run holding the tenant's lease, or a store removed, is not fixed by a retry seconds later."""
    return not isinstance(state.result(raise_on_failure=False), LeaseHeld | StoreMissing)


@task(name="consolidate-tenant", task_run_name="consolidate-{user_id}", retries=1, retry_delay_seconds=[5],
      retry_condition_fn=_worth_retrying, cache_policy=NO_CACHE)
def consolidate_tenant(store: Settings, user_id: str, run_id: str, as_of: datetime, stages: list[str],
                       tools: Tools) -> dict[str, StageResult]:
    """Every chosen stage of one tenant under its lease; one log line with each stage's counts.

    A retry resumes: completed stages are skipped from their runs rows.
    """
    out = run_tenant(store, user_id, run_id, as_of, stages, tools)
    get_run_logger().info("tenant %s: %s", user_id, tenant_summary(out))
    return out


@task(name="stage", retries=1, retry_delay_seconds=[5], retry_condition_fn=_worth_retrying, cache_policy=NO_CACHE)
def run_stage(stage: str, step: Callable[[], StageResult]) -> StageResult:
    """One stage of one tenant (engram.consolidate.runner.run_stage, through `step`)."""
    return step()


def stage_task(stage: str, user_id: str) -> Task[..., StageResult]:
    """The Prefect task of one stage, named after it."""
    delays = STAGE_RETRIES.get(stage, [5])
    return run_stage.with_options(name=stage, task_run_name=lambda: f"{stage}-{user_id}", retries=len(delays),
                                  retry_delay_seconds=delays)
