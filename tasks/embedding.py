"""Prefect task of the embedding worker: one pass over every tenant's embedding queue."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from engram.embed import Embedder
from engram.embed.worker import drain_once
from engram.settings import Settings


@task(name="drain-embedding-queue", retries=2, retry_delay_seconds=[2, 10], cache_policy=NO_CACHE)
def drain_embedding_queue(settings: Settings, embedder: Embedder) -> dict[str, int]:
    """Embed the pending episodes and facts of every tenant; a locked store is counted, not raised."""
    return drain_once(settings, embedder)
