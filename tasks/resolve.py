"""Prefect task for stage 5: batched LLM decisions on queued reviews (a thin wrapper)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from engram import consolidate, llm as llms
from engram.settings import Settings


@task(name="resolve-reviews", retries=3, retry_delay_seconds=[2, 10, 30], cache_policy=NO_CACHE)
def resolve_reviews(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Decide the tenant's queued contradictions and merges with the LLM; nothing without an LLM."""
    ctx = consolidate.StageContext(settings, user_id, run_id, as_of, dry_run)
    return consolidate.resolve(ctx, llms.from_settings(settings))
