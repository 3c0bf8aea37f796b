"""The embedding worker flow: drain the embedding queue pass after pass, so search finds new episodes by meaning."""

from __future__ import annotations

from prefect import flow, get_run_logger

from engram import embed as embedders
from engram.embed.worker import watch
from engram.settings import load_settings
from engram.tasks.embedding import drain_embedding_queue


@flow(name="embedding-worker", log_prints=False)
def embedding_worker(duration_s: float = 300.0) -> dict[str, int]:
    """Embed new episodes and facts of every tenant every ENGRAM_EMBED_POLL_S seconds, for duration_s seconds."""
    settings = load_settings()
    embedder = embedders.from_settings(settings)
    return watch(settings, embedder, max_seconds=duration_s, drain_pass=drain_embedding_queue,
                 logger=get_run_logger())


if __name__ == "__main__":
    embedding_worker()
