"""The embedding queue: drain rows waiting for a vector, in batches, in short write transactions."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from engram import db
from engram.embed import Embedder, validate_vectors
from engram.errors import EmbedderUnavailable
from engram.settings import Settings

log = logging.getLogger(__name__)

QUEUES = {
    "episodes": ("queries/pending_embed_episodes", "queries/store_episode_embeddings"),
    "facts": ("queries/pending_embed_facts", "queries/store_fact_embeddings"),
}


def embeddings_table(user_ids: list[str], ids: list[str], vectors: np.ndarray, embedder: Embedder) -> pa.Table:
    """An Arrow table of (user_id, id, embedding, embedding_model, embedding_dim)."""
    flat = pa.array(vectors.astype(np.float32).ravel(), type=pa.float32())
    offsets = pa.array(np.arange(0, vectors.size + 1, vectors.shape[1], dtype=np.int32))
    return pa.table(
        {
            "user_id": pa.array(user_ids, pa.string()),
            "id": pa.array(ids, pa.string()),
            "embedding": pa.ListArray.from_arrays(offsets, flat),
            "embedding_model": pa.array([embedder.model] * len(ids), pa.string()),
            "embedding_dim": pa.array([embedder.dim] * len(ids), pa.int32()),
        }
    )


def drain(
    settings: Settings,
    embedder: Embedder,
    table: str = "episodes",
    user_id: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed every pending row of `table`; returns how many were embedded.

    The connection is closed while the model runs, so other processes can write in between; each
    opening stores the previous batch and reads the next (opening a store costs tens of ms).
    A failing embedder leaves the remaining rows pending and raises EmbedderUnavailable.
    """
    pending_sql, store_sql = QUEUES[table]
    done = 0
    finished: pa.Table | None = None
    while True:
        with db.open_store(settings) as con:
            if finished is not None:
                with db.transaction(con), db.registered(con, "incoming_embeddings", finished):
                    db.execute(con, store_sql)
            batch = db.rows(con, pending_sql, user_id=user_id, limit=settings.embed_batch_size)
        if finished is not None:
            done += finished.num_rows
            log.info("embedded %d %s (total %d)", finished.num_rows, table, done)
            if progress:
                progress(finished.num_rows)
        if not batch:
            return done
        users, ids, texts = (list(col) for col in zip(*batch, strict=True))
        try:
            vectors = validate_vectors(embedder.embed(texts), embedder.dim, field=f"{table}.embedding")
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # any model failure: keep the queue, report a typed error
            raise EmbedderUnavailable(f"embedder {embedder.provider} failed: {type(exc).__name__}: {exc}") from exc
        finished = embeddings_table(users, ids, vectors, embedder)
