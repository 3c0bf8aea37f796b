"""Prefect tasks of batch mode: collect finished Gemini batch jobs, submit the run's job."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from engram import llm as llms
from engram.consolidate import batch
from engram.settings import Settings


@task(name="collect-llm-batches", retries=2, retry_delay_seconds=[10, 60], cache_policy=NO_CACHE)
def collect_llm_batches(settings: Settings, run_id: str, as_of: datetime) -> dict[str, Any]:
    """Poll the open batch jobs; apply finished ones, re-queue lost ones (each tenant atomically)."""
    client = llms.batch_from_settings(settings, force=True)
    return batch.collect_batches(settings, client, run_id, as_of) if client else {"llm": "none"}


@task(name="submit-llm-batch", retries=2, retry_delay_seconds=[10, 60], cache_policy=NO_CACHE)
def submit_llm_batch(settings: Settings, run_id: str, as_of: datetime, user_id: str | None = None) -> dict[str, Any]:
    """Send every tenant's (or one tenant's) pending LLM cases as one batch job and record it."""
    client = llms.batch_from_settings(settings)
    return batch.submit_batch(settings, client, run_id, as_of, user_id) if client else {"llm": "none"}
