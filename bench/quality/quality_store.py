"""A throwaway engram store for the evaluations: ingest with precomputed vectors, run the nightly stages."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.quality_embed import CachedEmbedder
from bench.sql import named
from engram.consolidate.context import StageContext
from engram.consolidate.runner import Tools, run_stage
from engram.index.vector_index import CACHE
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.ingest import add_episodes


@dataclass
class Store:
    """Settings on a store in a temp dir that is removed by close(), and the LLM its runs use (None = none)."""

    settings: Settings
    tmp: tempfile.TemporaryDirectory
    llm: Any = None

    def close(self) -> None:
        """Drop cached indexes of this store and delete its files."""
        CACHE.clear()
        self.tmp.cleanup()


def open_temp_store(name: str, embedder: CachedEmbedder, llm: str = "none", **overrides: Any) -> Store:
    """A fresh store under the system temp dir with the embedder's model and the LLM provider `llm`
    (none: extractive stages and no resolve; fake: the deterministic rules; gemini: needs a key)."""
    from engram import llm as llms

    tmp = tempfile.TemporaryDirectory(prefix=f"engram-quality-{name}-")
    root = Path(tmp.name)
    provider = "hash" if embedder.provider == "hash" else "minilm"
    settings = load_settings(db_path=root / "store.duckdb", archive_dir=root / "archive", embedder=provider,
                             llm=llm, **overrides)
    return Store(settings, tmp, llms.from_settings(settings))


def ingest(store: Store, records: list[dict[str, Any]], embedder: CachedEmbedder) -> None:
    """Append the records with their content embedded (as the embedding queue would)."""
    vectors = embedder.embed([r["content"] for r in records])
    add_episodes(records, store.settings, embeddings=vectors, embedding_model=embedder.model)


def consolidate_tenant(store: Store, user_id: str, embedder: CachedEmbedder, as_of: datetime,
                       run_id: str = "quality-run") -> dict[str, Any]:
    """extract, confidence, merge, digest, resolve (with an LLM), deprecate for one tenant; confidences after extract
    and at the end."""
    ctx = StageContext(store.settings, user_id, run_id, as_of)
    tools = Tools(embedder, store.llm)
    with db.held_open(store.settings):  # as the nightly flow holds it for each tenant
        counts: dict[str, Any] = {"extract": run_stage(ctx, "extract", tools).counts}
        after_extract = fact_table(store, user_id)
        for stage in ("confidence", "merge", "digest") + (("resolve",) if store.llm is not None else ()) + ("deprecate",):
            counts[stage] = run_stage(ctx, stage, tools).counts
    counts["confidence_after_extract"] = [f["confidence"] for f in after_extract]
    return counts


def fact_table(store: Store, user_id: str) -> list[dict[str, Any]]:
    """Every fact of the tenant as dicts (id, text, status, confidence, evidence_count, merged_into_id)."""
    with db.open_reader(store.settings) as con:
        return db.query(con, named("quality_tenant_facts"), user_id=user_id).to_dicts()


def fact_sources(store: Store, user_id: str, relations: tuple[str, ...] = ("extracted_from", "supports")
                 ) -> dict[str, set[str]]:
    """fact id -> episode ids it rests on (the given relations)."""
    out: dict[str, set[str]] = defaultdict(set)
    with db.open_reader(store.settings) as con:
        for fid, eid, rel in db.rows(con, named("quality_fact_sources"), user_id=user_id):
            if rel in relations:
                out[fid].add(eid)
    return out


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarities of L2-normalised rows."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    return (a @ b.T).astype(np.float64)
