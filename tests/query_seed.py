"""Test helpers of the query module: seed episodes and facts with hash-embedder vectors."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from engram.embed.models import HashEmbedder
from engram.store import db
from engram.store.ingest import add_episodes
from engram.text.normalize import content_hash

T0 = datetime(2026, 1, 1, 12, 0, 0)


def seed_episodes(settings: Any, con: Any, rows: list[dict[str, Any]], embed: bool = True) -> list[str]:
    """Insert episodes (active with hash vectors when embed, else pending_embed); returns their ids."""
    records = []
    for i, r in enumerate(rows):
        rec = {"user_id": "u1", "created_at": (T0 + timedelta(minutes=i)).isoformat(), **r}
        records.append(rec)
    if embed:
        emb = HashEmbedder(settings.embed_dim)
        vectors = emb.embed([r["content"] for r in records])
        return add_episodes(records, settings, embeddings=vectors, embedding_model=emb.model, con=con).ids
    return add_episodes(records, settings, con=con).ids


def seed_facts(settings: Any, con: Any, rows: list[dict[str, Any]], embed: bool = True,
               model: str | None = None, dim: int | None = None, embedder: Any = None) -> list[str]:
    """Insert facts through the production insert_facts query (hash vectors unless `embedder` is given);
    returns their ids."""
    emb = embedder or HashEmbedder(dim or settings.embed_dim)
    out = []
    for i, r in enumerate(rows):
        text = r["text"]
        vec = emb.embed([text])[0].tolist() if embed else None
        now = r.get("created_at", T0)
        out.append({
            "id": r.get("id", f"f{i}"), "user_id": r.get("user_id", "u1"), "text": text,
            "claim_type": r.get("claim_type", "fact"), "category": "general",
            "confidence": r.get("confidence", 0.8), "confidence_at": r.get("confidence_at", datetime.now()),
            "evidence_count": 1, "status": r.get("status", "active"), "asserted_at": r.get("asserted_at", now),
            "valid_from": r.get("valid_from"), "created_at": now, "last_updated": now,
            "last_reinforced_at": now, "embedding": vec,
            "embedding_model": (model or emb.model) if embed else None,
            "embedding_dim": (dim or emb.dim) if embed else None,
            "content_hash": content_hash(text), "tags": r.get("tags", []),
            "visibility": r.get("visibility", "project"), "is_private": r.get("is_private", False),
            "run_id": "seed",
        })
    schema = pa.schema([
        ("id", pa.string()), ("user_id", pa.string()), ("text", pa.string()), ("claim_type", pa.string()),
        ("category", pa.string()), ("confidence", pa.float64()), ("confidence_at", pa.timestamp("us")),
        ("evidence_count", pa.int32()), ("status", pa.string()), ("asserted_at", pa.timestamp("us")),
        ("valid_from", pa.timestamp("us")), ("created_at", pa.timestamp("us")), ("last_updated", pa.timestamp("us")),
        ("last_reinforced_at", pa.timestamp("us")), ("embedding", pa.list_(pa.float32())),
        ("embedding_model", pa.string()), ("embedding_dim", pa.int32()), ("content_hash", pa.string()),
        ("tags", pa.list_(pa.string())), ("visibility", pa.string()), ("is_private", pa.bool_()),
        ("run_id", pa.string()),
    ])
    with db.registered(con, "incoming_facts", pa.Table.from_pylist(out, schema=schema)):
        db.execute(con, "queries/consolidate/insert_facts")
    return [o["id"] for o in out]


def unit(v: list[float]) -> np.ndarray:
    """A float32 unit vector."""
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)
