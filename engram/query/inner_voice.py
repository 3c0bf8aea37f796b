"""Inner voice: RAG over the tenant's thoughts, an extractive answer, saved as a summary thought."""

from __future__ import annotations

import json
import logging
from typing import Any

import pyarrow as pa
from pydantic import BaseModel

from engram import clock
from engram.errors import EngramError, FeatureDisabled, LLMError
from engram.index.vector_index import CACHE
from engram.llm.prompt_quote import memory_record, quote_memories
from engram.query import candidates
from engram.query.common import (
    embed_query,
    require_int,
    require_text,
    require_unit,
)
from engram.query.snippets import cut_at_sentence
from engram.settings import Settings
from engram.store import db, inbox
from engram.store.ingest import EPISODE_SCHEMA, validate_record
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id

log = logging.getLogger(__name__)

ANSWER_CHARS = 600
ANSWER_SOURCES = 3
EXCERPT_CHARS = 200
PIPELINE = "inner_voice"


class InnerVoiceSummary(BaseModel):
    """What the LLM summarizer returns."""

    summary: str


def inner_voice(
    content: str,
    top_k: int | None = None,
    sim_thresh: float | None = None,
    stage_kg: bool = False,
    confidence_min: float = 0.6,
    max_nodes: int = 30,
    max_edges: int = 60,
    save: bool = True,
    auto_mark_removal: bool | None = None,
    *,
    user_id: str,
    settings: Settings,
    con: db.Connection | None = None,
    embedder: Any = None,
    llm: Any = None,
) -> dict[str, Any]:
    """Top thoughts above sim_thresh, an extractive (or LLM) answer, optional save/KG staging/removal marks."""
    if not settings.enable_inner_voice:
        raise FeatureDisabled("inner_voice is disabled: set ENGRAM_ENABLE_INNER_VOICE=true to enable it")
    require_text(content, "content")
    user_id = normalise_user_id(user_id)
    settings = for_tenant(settings, user_id)
    top_k = require_int(settings.top_k if top_k is None else top_k, "top_k", 1, 50)
    sim_thresh = require_unit(settings.sim_thresh if sim_thresh is None else sim_thresh, "sim_thresh")
    confidence_min = require_unit(confidence_min, "confidence_min")
    max_nodes = require_int(max_nodes, "max_nodes", 0, 10_000)
    max_edges = require_int(max_edges, "max_edges", 0, 10_000)
    mark = settings.auto_mark_removal if auto_mark_removal is None else bool(auto_mark_removal)
    vectors, embedder = embed_query(settings, [content], embedder)
    if con is None:
        with db.open_store(settings) as own:
            return _run(own, settings, embedder, vectors[0], content, top_k, sim_thresh, stage_kg,
                        confidence_min, max_nodes, max_edges, save, mark, user_id, llm)
    return _run(con, settings, embedder, vectors[0], content, top_k, sim_thresh, stage_kg,
                confidence_min, max_nodes, max_edges, save, mark, user_id, llm)


def _run(con, settings, embedder, qvec, content, top_k, sim_thresh, stage_kg, confidence_min,
         max_nodes, max_edges, save, mark, user_id, llm) -> dict[str, Any]:
    sources = candidates.retrying(similar_thoughts, con, settings, embedder, qvec, user_id, top_k, sim_thresh)
    answer = synthesize(content, sources, llm) if sources else ""
    extraction = _extract(sources) if stage_kg else []
    saved_id = None
    staged = {"pending_entities": 0, "pending_relationships": 0}
    marked: list[str] = []
    summary_table = None
    if save and sources:
        summary_table, saved_id = _summary_row(user_id, answer, [s["thought_id"] for s in sources], embedder)
    with db.transaction(con):  # save, staging and removal marks land together or not at all
        if summary_table is not None:
            with db.registered(con, "incoming_episodes", summary_table):
                db.execute(con, "queries/store/insert_episodes")
        if stage_kg:
            staged = _stage(con, user_id, extraction, max_nodes, max_edges, confidence_min)
        if mark and sources:
            marked = [r[0] for r in db.rows(con, "queries/query/query_mark_removal", user_id=user_id,
                                             ids=[s["thought_id"] for s in sources])]
            inbox.withdraw(settings, user_id, marked)
    log.info("inner_voice: %d source(s), saved=%s, staged=%s, marked=%d", len(sources), bool(saved_id), staged,
             len(marked))
    return {"synthesized_answer": answer, "saved_thought_id": saved_id, "sources": public_sources(sources),
            "staged": staged, "marked_for_removal": sorted(marked)}


def similar_thoughts(con, settings: Settings, embedder: Any, qvec, user_id: str, top_k: int,
                     sim_thresh: float) -> list[dict[str, Any]]:
    """The tenant's thoughts (episodes of kind thought) with cosine >= sim_thresh, best first."""
    index = CACHE.get(con, settings.db_path, "episodes", user_id, embedder.model, embedder.dim)
    rows, sims = index.vector_top(qvec, min(max(4 * top_k, 20), max(index.n_vectors, 1)))
    f = candidates.Filters(user_id=user_id, now=clock.now(), decay_rate=settings.decay_rate, kinds=("thought",))
    keep = sims >= sim_thresh
    rows, sims = rows[keep], sims[keep]
    kept = candidates.fetch(con, index, rows, f)
    out = []
    for r, s in zip(rows.tolist(), sims.tolist(), strict=True):
        row = kept.get(index.ids[r])
        if row is None or row["status"] != "active":
            continue
        excerpt, _, _ = cut_at_sentence(row["text"], EXCERPT_CHARS)
        out.append({"thought_id": row["id"], "similarity": round(float(s), 6), "excerpt": excerpt,
                    "_text": row["text"], "_created_at": row["created_at"]})
        if len(out) >= top_k:
            break
    return out


def extractive_answer(sources: list[dict[str, Any]]) -> str:
    """The first line of each of the best ANSWER_SOURCES thoughts, about ANSWER_CHARS long (no new text)."""
    lines = []
    for s in sources[:ANSWER_SOURCES]:
        first = s["_text"].strip().splitlines()[0].strip() if s["_text"].strip() else ""
        if first:
            lines.append(first)
    text, _, _ = cut_at_sentence("\n".join(lines), ANSWER_CHARS)
    return text


def synthesize(content: str, sources: list[dict[str, Any]], llm: Any) -> str:
    """The LLM summary when an LLM is given (falls back on failure), else the extractive answer."""
    if llm is not None:
        notes = [memory_record(s["thought_id"], "thought", s.get("_created_at"), s["_text"])
                 for s in sources[:ANSWER_SOURCES]]
        prompt = (
            "Summarise what these notes say about the question, in at most 3 sentences, using only the notes.\n"
            + quote_memories(notes) + f"\nQuestion (a JSON string): {json.dumps(content, ensure_ascii=False)}"
        )
        try:
            summary = llm.generate(prompt, InnerVoiceSummary).parsed.summary.strip()
            if summary:
                return cut_at_sentence(summary, ANSWER_CHARS)[0]
        except (LLMError, AttributeError):
            log.warning("inner_voice: LLM summary failed; using the extractive answer")
    return extractive_answer(sources)


def _summary_row(user_id: str, answer: str, source_ids: list[str], embedder: Any) -> tuple[pa.Table, str]:
    now = clock.now()
    row = validate_record({
        "user_id": user_id, "content": answer, "kind": "thought", "origin": "model", "is_summary": True,
        "summary_of": source_ids, "pipeline": PIPELINE, "created_at": now,
    }, now)
    vec = embed_query_vector(embedder, answer)
    row.update(embedding=vec, embedding_model=embedder.model, embedding_dim=embedder.dim, status="active",
               summary_of=list(source_ids))
    return pa.Table.from_pylist([row], schema=EPISODE_SCHEMA), row["id"]


def embed_query_vector(embedder: Any, text: str) -> list[float]:
    """One vector as a list (the summary thought is stored active, already embedded)."""
    return [float(x) for x in embedder.embed([text])[0]]


def _extract(sources: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    try:
        from engram.thoughtdb.kg_extract import extract_candidates
    except ImportError as exc:  # the extractor ships with engram; this guards partial installs
        raise EngramError("stage_kg needs engram.thoughtdb.kg_extract") from exc
    return [(s["thought_id"], extract_candidates(s["_text"])) for s in sources]


def _stage(con, user_id: str, extraction: list[tuple[str, Any]], max_nodes: int, max_edges: int,
           confidence_min: float) -> dict[str, int]:
    """Stage candidates of each source thought, the caps shared across all sources."""
    from engram.thoughtdb.kg_extract import stage_candidates

    nodes_left, edges_left = max_nodes, max_edges
    total_nodes = total_edges = 0
    for thought_id, found in extraction:
        n, e = stage_candidates(con, user_id, thought_id, found, nodes_left, edges_left, confidence_min)
        total_nodes += n
        total_edges += e
        nodes_left, edges_left = max(nodes_left - n, 0), max(edges_left - e, 0)
    return {"pending_entities": total_nodes, "pending_relationships": total_edges}


def public_sources(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sources without internal fields."""
    return [{k: v for k, v in s.items() if not k.startswith("_")} for s in sources]

