"""Prefect tasks for the nightly stages: thin wrappers over engram.consolidate."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from engram import embed
from engram import llm as llms
from engram.consolidate import stages as consolidate
from engram.settings import Settings
from engram.store.runs import LeaseHeld


@task(name="consolidate-tenant", task_run_name="consolidate-{user_id}", retries=1, retry_delay_seconds=[5],
      cache_policy=NO_CACHE)
def consolidate_tenant(settings: Settings, user_id: str, run_id: str, as_of: datetime, stages: list[str],
                       dry_run: bool) -> dict[str, Any]:
    """Every chosen stage of one tenant under its lease; logs each stage's counts, or the stage that failed.

    A retry resumes: completed stages are skipped from their runs rows, and embed/archive/publish
    only do what is still pending.
    """
    logger = get_run_logger()

    def failed(stage: str, counts: dict[str, Any]) -> None:
        if "failed" in counts:
            logger.error("tenant %s: stage %s %s", user_id, stage, consolidate.stage_summary(counts))

    try:
        out = consolidate.run_tenant(settings, user_id, run_id, as_of, stages, dry_run, embed.from_settings(settings),
                                     llms.from_settings(settings), on_stage=failed)
    except LeaseHeld as exc:  # another live run has the tenant: a retry in 5 s would not help
        logger.warning("skipped tenant %s: %s", user_id, exc)
        return {"skipped": str(exc)}
    logger.info("tenant %s: %s", user_id, consolidate.tenant_summary(out))  # one line: ~3 ms per log record
    return out


def _ctx(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> consolidate.StageContext:
    return consolidate.StageContext(settings, user_id, run_id, as_of, dry_run)


@task(name="embed-pending", retries=2, retry_delay_seconds=[5, 30], cache_policy=NO_CACHE)
def embed_pending(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Drain the tenant's embedding queue."""
    return consolidate.embed_pending(_ctx(settings, user_id, run_id, as_of, dry_run), embed.from_settings(settings))


@task(name="extract-facts", retries=2, retry_delay_seconds=[5, 30], cache_policy=NO_CACHE)
def extract_facts(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Cluster new episodes into candidate facts with provenance."""
    return consolidate.extract(_ctx(settings, user_id, run_id, as_of, dry_run), embed.from_settings(settings),
                               llms.from_settings(settings))


@task(name="update-confidence", retries=1, cache_policy=NO_CACHE)
def update_confidence(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Evidence accumulation and contradiction detection."""
    return consolidate.confidence(_ctx(settings, user_id, run_id, as_of, dry_run), embed.from_settings(settings))


@task(name="merge-duplicates", retries=1, cache_policy=NO_CACHE)
def merge_duplicates(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Auto-merge near-duplicate facts; queue the ambiguous ones."""
    return consolidate.merge(_ctx(settings, user_id, run_id, as_of, dry_run), embed.from_settings(settings))


@task(name="deprecate-facts", retries=1, cache_policy=NO_CACHE)
def deprecate_facts(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Deprecate facts whose decayed confidence fell below the floor."""
    return consolidate.deprecate(_ctx(settings, user_id, run_id, as_of, dry_run))


@task(name="resolve-reviews", retries=3, retry_delay_seconds=[2, 10, 30], cache_policy=NO_CACHE)
def resolve_reviews(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Batched LLM decisions on queued contradictions and merges (nothing without an LLM)."""
    ctx = _ctx(settings, user_id, run_id, as_of, dry_run)
    return consolidate.resolve(ctx, llms.from_settings(settings))


@task(name="archive-retired", retries=1, cache_policy=NO_CACHE)
def archive_retired(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Export retired rows past retention to verified parquet, then remove them from the live store."""
    from engram.archive.ops import archive_due

    return archive_due(settings, user_id, as_of, run_id, dry_run=dry_run)


@task(name="publish-run", retries=1, cache_policy=NO_CACHE)
def publish_run(settings: Settings, user_id: str, run_id: str, as_of: datetime, dry_run: bool) -> dict[str, Any]:
    """Embed modified facts and return the run's changed facts for the report."""
    return consolidate.publish(_ctx(settings, user_id, run_id, as_of, dry_run), embed.from_settings(settings))
