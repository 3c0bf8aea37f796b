"""Retrieve-only snippets with provenance: the retrieve spec (no synthesized text, ever)."""

from __future__ import annotations

import json
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from engram import clock
from engram.errors import EngramError, FeatureDisabled, InvalidInput, StoreError
from engram.index.blas import single_threaded
from engram.index.published import PUBLISHED
from engram.index.vector_index import CACHE, PendingFill
from engram.query import candidates
from engram.query.budget import require_budget
from engram.query.common import (
    embed_query,
    require_int,
    require_tags,
    require_text,
    require_unit,
)
from engram.query.snippets import cut_at_sentence, matching_passage, trust_tier
from engram.query.wordpiece import count_tokens
from engram.settings import Settings
from engram.store import db, hot_path
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id
from engram.text.normalize import content_hash

SOURCE_TYPE = {"facts": "kg_observation", "kg_entities": "kg_entity", "episodes": "thought"}
KG_TABLES = ("facts", "kg_entities")
FLOOR_STEP = 0.05


@dataclass
class Candidate:
    """One scored row of one source before slot allocation."""

    table: str
    row: dict[str, Any]
    score: float
    chash: str

    @property
    def is_kg(self) -> bool:
        """True for KG rows (facts and entities)."""
        return self.table in KG_TABLES


def retrieve(
    query: str,
    top_k: int | None = None,
    floor: float | None = None,
    mix: float | None = None,
    include_private: bool = False,
    include_tags: list[str] | None = None,
    exclude_tags: list[str] | None = None,
    *,
    user_id: str,
    settings: Settings,
    con: db.Connection | None = None,
    embedder: Any = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Snippets {id, table, source_type, origin, trust_tier, ...} and diagnostics for the query; with
    `max_tokens`, the best that fit that many tokens of the result as JSON (the MCP reply's text)."""
    started = time.perf_counter()
    if not settings.enable_inner_voice:
        raise FeatureDisabled("retrieve is disabled: set ENGRAM_ENABLE_INNER_VOICE=true to enable it")
    require_text(query, "query")
    user_id = normalise_user_id(user_id)
    settings = for_tenant(settings, user_id)
    top_k = require_int(settings.retrieve_top_k if top_k is None else top_k, "top_k", 1, 50)
    mix = require_unit(settings.inner_voice_mix if mix is None else mix, "mix")
    if floor is not None:
        floor = require_unit(floor, "floor")
    if max_tokens is not None:
        max_tokens = require_budget(max_tokens)
    filters = candidates.Filters(
        user_id=user_id, now=clock.now(), include_private=bool(include_private),
        include_tags=tuple(require_tags(include_tags, "include_tags")),
        exclude_tags=tuple(require_tags(exclude_tags, "exclude_tags")),
        min_confidence=settings.deprecate_below, decay_rate=settings.decay_rate,
    )
    vectors, embedder = embed_query(settings, [query], embedder)
    try:
        if con is None:
            # None while another process holds the store (or the hot path stays off it): what was published
            with nullcontext(None) if hot_path.off_store(settings) else db.open_reader_if_free(settings) as own:
                pools = _fetch_sources(own, settings, embedder, vectors[0], top_k, filters)
        else:
            pools = _fetch_sources(con, settings, embedder, vectors[0], top_k, filters)
        result = _assemble(pools, top_k, floor, mix, settings, embedder, started, query)
    except EngramError:
        raise
    except Exception as exc:
        if type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb"):
            raise StoreError(f"retrieve: store query failed: {type(exc).__name__}") from exc
        raise EngramError(f"retrieve: unexpected {type(exc).__name__}") from exc
    return result if max_tokens is None else within_budget(result, max_tokens)


def within_budget(result: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """The result with its last snippets left out until its JSON text fits `max_tokens` (diagnostics say
    how many were left out); an error naming max_tokens when the diagnostics alone do not fit."""
    snippets, diag = list(result["snippets"]), dict(result["diagnostics"])
    while True:
        out = {"snippets": snippets, "diagnostics": diag}
        tokens = count_tokens(json.dumps(out, ensure_ascii=False))
        if tokens <= max_tokens:
            return out
        if not snippets:
            raise InvalidInput(f"max_tokens: the reply's diagnostics alone take {tokens} tokens, got {max_tokens}")
        snippets.pop()
        diag.update(k_ret=len(snippets), omitted_for_budget=diag.get("omitted_for_budget", 0) + 1,
                    no_results=not snippets, reason=diag["reason"] if snippets else "max_tokens")


def _fetch_sources(
    con: db.Connection, settings: Settings, embedder: Any, qvec: np.ndarray, top_k: int, f: candidates.Filters,
) -> dict[str, list[Candidate]]:
    """Separate candidate fetches per source table (no UNION), each capped."""
    cap = min(3 * top_k, settings.max_candidates_per_source)
    pools: dict[str, list[Candidate]] = {}
    with single_threaded():
        for table in ("facts", "kg_entities", "episodes"):
            pools[table] = candidates.retrying(_source_pool, con, settings, embedder, qvec, table, cap, f)
    return pools


def _source_pool(
    con: db.Connection, settings: Settings, embedder: Any, qvec: np.ndarray, table: str, cap: int,
    f: candidates.Filters,
) -> list[Candidate]:
    """One source's candidates: cosine top rows that pass the filters, at most `cap` (without the store:
    from the published facts and episodes plus the inbox; the thought graph is not published)."""
    if con is None:
        if table == "kg_entities":
            return []
        fill = PendingFill(embedder.embed, settings.search_embed_pending, embedder.model)  # as search does
        index = PUBLISHED.index(settings, table, f.user_id, embedder.model, embedder.dim, fill)
    else:
        index = CACHE.get(con, settings.db_path, table, f.user_id, embedder.model, embedder.dim)
    rows, sims = index.vector_top(qvec, min(4 * cap, max(index.n_vectors, 1)))
    kept = candidates.fetch(con, index, rows, f)
    pool = [
        Candidate(table, kept[index.ids[r]], float(s), content_hash(kept[index.ids[r]]["text"]))
        for r, s in zip(rows.tolist(), sims.tolist(), strict=True)
        if index.ids[r] in kept
    ]
    return pool[:cap]


def _adaptive_floor(scores: list[float], top_k: int, floor: float | None, settings: Settings) -> float:
    """The given floor, or from sim_thresh down in steps to min_floor until top_k candidates pass."""
    if floor is not None:
        return floor
    current = max(settings.sim_thresh, settings.min_floor)
    while sum(s >= current for s in scores) < top_k and current - FLOOR_STEP >= settings.min_floor - 1e-9:
        current = round(current - FLOOR_STEP, 4)
    return current


def allocate(kg: list[Candidate], thoughts: list[Candidate], top_k: int, mix: float) -> list[Candidate]:
    """kg gets round(mix top_k) slots, thoughts the rest; >= 1 each when both exist; backfill on underflow."""
    kg_slots = math.floor(mix * top_k + 0.5)
    if kg and thoughts and top_k >= 2:
        kg_slots = min(max(kg_slots, 1), top_k - 1)
    th_slots = top_k - kg_slots
    if len(kg) < kg_slots:
        th_slots += kg_slots - len(kg)
        kg_slots = len(kg)
    if len(thoughts) < th_slots:
        kg_slots = min(len(kg), kg_slots + th_slots - len(thoughts))
        th_slots = len(thoughts)
    chosen = kg[:kg_slots] + thoughts[:th_slots]
    return sorted(chosen, key=lambda c: (-c.score, c.table, c.row["id"]))


def _assemble(
    pools: dict[str, list[Candidate]], top_k: int, floor: float | None, mix: float, settings: Settings,
    embedder: Any, started: float, query: str,
) -> dict[str, Any]:
    everything = [c for pool in pools.values() for c in pool]
    floor_used = _adaptive_floor([c.score for c in everything], top_k, floor, settings)
    passing = sorted((c for c in everything if c.score >= floor_used), key=lambda c: (-c.score, c.table, c.row["id"]))
    seen_ids: set[tuple[str, str]] = set()
    seen_hashes: set[str] = set()
    unique: list[Candidate] = []
    for c in passing:
        key = (c.table, c.row["id"])
        if key in seen_ids or c.chash in seen_hashes:
            continue
        seen_ids.add(key)
        seen_hashes.add(c.chash)
        unique.append(c)
    chosen = allocate([c for c in unique if c.is_kg], [c for c in unique if not c.is_kg], top_k, mix)
    kg_n = len(pools["facts"]) + len(pools["kg_entities"])
    reason = None
    if not chosen:
        reason = "no_candidates" if not everything else "below_floor"
    return {
        "snippets": [_snippet(c, query) for c in chosen],
        "diagnostics": {
            "provider": embedder.provider, "model": embedder.model, "dim": embedder.dim,
            "k_req": top_k, "k_ret": len(chosen), "kg_candidates": kg_n,
            "thought_candidates": len(pools["episodes"]), "floor_used": floor_used,
            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            "no_results": not chosen, "reason": reason,
        },
    }


def _snippet(c: Candidate, query: str) -> dict[str, Any]:
    """A candidate as a snippet: its text cut at a sentence (a long episode: the passage that matched)."""
    row = c.row
    span = matching_passage(row["text"], query) if c.table == "episodes" else None
    first = span[0] if span else 0
    text, start, end = cut_at_sentence(row["text"][first:span[1]] if span else row["text"])
    start, end = start + first, end + first
    origin = row.get("origin") if c.table == "episodes" else ("consolidated" if c.table == "facts" else "kg")
    created = row.get("created_at")
    return {
        "id": row["id"], "table": c.table, "source_type": SOURCE_TYPE[c.table], "origin": origin,
        "trust_tier": trust_tier(c.table, row.get("confidence"), row.get("origin")),
        "created_at": created.isoformat() if created is not None else None,
        "text": text, "score": round(c.score, 6), "content_hash": c.chash,
        "span_start": start, "span_end": end,
    }
