"""The embedding queue: drain rows waiting for a vector, in batches, in short write transactions."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from engram.embed.models import Embedder, validate_vectors
from engram.errors import EmbedderUnavailable
from engram.settings import Settings
from engram.store import db, inbox
from engram.store.crash import crash_point
from engram.store.fold import fold_tenants

log = logging.getLogger(__name__)

READ_ROWS = 2048  # pending rows read per store opening (see drain)
PIECES = re.compile(r"\w+|[^\w\s]")  # words and punctuation marks: roughly a text's tokens

QUEUES = {
    "episodes": ("queries/embed/pending_embed_episodes", "queries/embed/store_episode_embeddings"),
    "facts": ("queries/embed/pending_embed_facts", "queries/embed/store_fact_embeddings"),
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
    stop: Callable[[], bool] | None = None,
) -> int:
    """Embed every pending row of `table`; returns how many were embedded (drain_tables, one table)."""
    return drain_tables(settings, embedder, (table,), user_id, progress, stop)[table]


def drain_tables(
    settings: Settings,
    embedder: Embedder,
    tables: tuple[str, ...] = ("episodes", "facts"),
    user_id: str | None = None,
    progress: Callable[[int], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> dict[str, int]:
    """Embed every pending row of these tables; returns how many were embedded per table. Episodes
    waiting in the store's inbox (engram.store.inbox) are folded in first.

    The connection is closed while the model runs, so other processes can write in between. Each
    opening stores what was embedded since the last one and reads up to READ_ROWS more rows of each
    table, which the embedder takes embed_batch_size at a time (an opening plus its checkpoint costs
    tens of ms, and more as the table grows: small read batches made the queue slower than the hash
    embedder, and an opening per table doubled the embedding worker's cost per pass).
    Rows of one read are embedded shortest text first, so each call holds texts of similar length.
    A failing embedder keeps what was embedded, leaves the remaining rows pending and raises
    EmbedderUnavailable. When `stop()` turns true (the worker got SIGTERM), the batch under way is
    finished and stored, and the rest stays pending.
    """
    size = settings.embed_batch_size
    done = dict.fromkeys(tables, 0)
    finished: dict[str, list[pa.Table]] = {t: [] for t in tables}
    fold = "episodes" in tables
    while True:
        with db.open_store(settings) as con:
            if fold:  # episodes written to the inbox while the store was held join the queue first
                users = [user_id] if user_id else inbox.tenants(settings)
                fold_tenants(con, settings, users, (embedder.model, embedder.dim))
                fold = False
            pending: dict[str, list[tuple]] = {}
            for table in tables:
                done[table] += _store(con, QUEUES[table][1], finished[table], table, done[table])
                pending[table] = db.rows(con, QUEUES[table][0], user_id=user_id, limit=max(size, READ_ROWS))
        finished = {t: [] for t in tables}
        if not any(pending.values()):
            return done
        try:
            for table, rows in pending.items():
                rows = by_length(rows)
                for start in range(0, len(rows), size):
                    users, ids, texts = (list(col) for col in zip(*rows[start : start + size], strict=True))
                    vectors = _embed(embedder, texts, table)
                    finished[table].append(embeddings_table(users, ids, vectors, embedder))
                    if progress:
                        progress(len(ids))
                    if stop is not None and stop():
                        break
                if stop is not None and stop():
                    break
        except EmbedderUnavailable:
            with db.open_store(settings) as con:
                for table in tables:
                    _store(con, QUEUES[table][1], finished[table], table, done[table])
            raise
        if stop is not None and stop():
            with db.open_store(settings) as con:
                for table in tables:
                    done[table] += _store(con, QUEUES[table][1], finished[table], table, done[table])
            return done


def by_length(rows: list[tuple]) -> list[tuple]:
    """Rows by the word and punctuation count of their text (the last field), shortest first.

    One embedder call then holds texts of similar token length and pads them little; this count
    follows WordPiece tokens more closely than characters do (bench/perf/EMBED.md).
    """
    return sorted(rows, key=lambda row: len(PIECES.findall(row[-1])))


def _embed(embedder: Embedder, texts: list[str], table: str) -> np.ndarray:
    try:
        return validate_vectors(embedder.embed(texts), embedder.dim, field=f"{table}.embedding")
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # any model failure: keep the queue, report a typed error
        raise EmbedderUnavailable(f"embedder {embedder.provider} failed: {type(exc).__name__}: {exc}") from exc


def _store(con: db.Connection, store_sql: str, finished: list[pa.Table], table: str, done: int) -> int:
    if not finished:
        return 0
    incoming = pa.concat_tables(finished)
    with db.transaction(con), db.registered(con, "incoming_embeddings", incoming):
        db.execute(con, store_sql)
        crash_point(f"embed:{table}:mid_write")
    log.info("embedded %d %s (total %d)", incoming.num_rows, table, done + incoming.num_rows)
    return incoming.num_rows
