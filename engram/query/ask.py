"""Grounded answers: the LLM answers from facts and KG entities only, and we verify its citations."""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from engram import clock
from engram.errors import EngramError, FeatureDisabled, LLMError
from engram.index.vector_index import CACHE
from engram.llm.prompt_quote import DATA_RULE, data_block, memory_record
from engram.query import candidates
from engram.query.common import embed_query, require_int, require_text
from engram.query.search import search_memory
from engram.query.wordpiece import count_tokens
from engram.settings import Settings
from engram.store import db
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id
from engram.text.normalize import normalize
from engram.text.tokens import tokenize

log = logging.getLogger(__name__)

MIN_CITED_SOURCES = 2
MIN_COVERAGE = 0.6
CONTEXT_TOKENS = 1500
MAX_FACTS = 12
MAX_ENTITIES = 5
SUMMARY_EVERY = 10          # the rolling summary is refreshed after every 10 exchanges
SUMMARY_CHARS = 1500


class Citation(BaseModel):
    """One cited source: its label (e.g. S2) and the exact words relied on."""

    source: str
    quote: str


class GroundedAnswer(BaseModel):
    """The LLM's structured reply."""

    answer: str
    citations: list[Citation] = Field(default_factory=list)
    confidence: float = Field(0.0, ge=0.0, le=1.0)


@dataclass
class Source:
    """One context item shown to the model."""

    label: str
    id: str
    table: str
    text: str
    created_at: Any = None


def ask(
    query: str,
    session: str | None = None,
    *,
    user_id: str,
    settings: Settings,
    con: db.Connection | None = None,
    llm: Any = None,
    embedder: Any = None,
    context_tokens: int = CONTEXT_TOKENS,
) -> dict[str, Any]:
    """Answer from facts/KG with >= 2 verified citations and coverage >= 0.6, else a refusal with the reason."""
    require_text(query, "query", 4000)
    user_id = normalise_user_id(user_id)
    settings = for_tenant(settings, user_id)
    if session is not None:
        require_text(session, "session", 200)
    require_int(context_tokens, "context_tokens", 100, 100_000)
    if llm is None:
        from engram import llm as llms

        llm = llms.from_settings(settings)
    if llm is None:
        raise FeatureDisabled("ask needs an LLM and ENGRAM_LLM=none: set ENGRAM_LLM=gemini (answers are never "
                              "made up without one)")
    if con is None:
        with db.open_store(settings) as own:
            return _ask(own, settings, llm, embedder, query, session, user_id, context_tokens)
    return _ask(con, settings, llm, embedder, query, session, user_id, context_tokens)


def _ask(con, settings, llm, embedder, query, session, user_id, context_tokens) -> dict[str, Any]:
    started = time.perf_counter()
    now = clock.now()
    session_id = session or f"ask_{uuid.uuid4().hex[:20]}"
    db.execute(con, "queries/query/query_ask_create_session", user_id=user_id, session_id=session_id, now=now)
    _, n_done, summary, summary_through = db.rows(con, "queries/query/query_ask_session", user_id=user_id,
                                                  session_id=session_id)[0]
    history = db.rows(con, "queries/query/query_ask_exchanges_since", user_id=user_id, session_id=session_id,
                      after=summary_through)
    sources = gather_context(con, settings, embedder, query, user_id, context_tokens)
    reply = None
    if len(sources) < MIN_CITED_SOURCES:
        verdict = _refusal(f"only {len(sources)} fact(s) in memory match the question; need {MIN_CITED_SOURCES}")
    else:
        prompt = build_prompt(query, sources, summary, history)
        try:
            reply = llm.generate(prompt, GroundedAnswer)
        except EngramError:
            raise
        except ValueError as exc:  # e.g. the fake LLM has no rule for GroundedAnswer
            raise LLMError(f"the configured LLM ({settings.llm}) cannot answer: {exc}") from exc
        verdict = verify(reply.parsed, sources)
    latency = (time.perf_counter() - started) * 1000
    seq = n_done + 1
    exchange_id = f"{session_id}:{seq}"
    new_summary = None
    if seq % SUMMARY_EVERY == 0:
        new_summary = rolling_summary(summary, history + [(seq, query, verdict["answer"], verdict["refused"])])
    with db.transaction(con):
        db.execute(
            con, "queries/query/query_ask_insert_exchange", id=exchange_id, user_id=user_id, session_id=session_id,
            seq=seq, query=query, answer=verdict["answer"], refused=verdict["refused"], reason=verdict["reason"],
            sources=[s["id"] for s in verdict["sources"]], confidence=verdict["confidence"],
            coverage=verdict["coverage"], input_tokens=reply.input_tokens if reply else 0,
            output_tokens=reply.output_tokens if reply else 0, latency_ms=latency,
            cost_usd=reply.cost_usd if reply else 0.0, prompt_hash=reply.prompt_hash if reply else None,
            model=reply.model if reply else None, now=now,
        )
        db.execute(con, "queries/query/query_ask_update_session", user_id=user_id, session_id=session_id, n=seq,
                   summary=new_summary, summary_through=seq, now=now)
    log.info("ask: session exchange %d, refused=%s, %d source(s)", seq, verdict["refused"], len(verdict["sources"]))
    return verdict | {
        "session_id": session_id, "exchange_id": exchange_id, "latency_ms": round(latency, 2),
        "input_tokens": reply.input_tokens if reply else 0, "output_tokens": reply.output_tokens if reply else 0,
        "cost_usd": reply.cost_usd if reply else 0.0, "prompt_hash": reply.prompt_hash if reply else None,
    }


def gather_context(con, settings: Settings, embedder: Any, query: str, user_id: str, budget: int) -> list[Source]:
    """The fact units of the default search (a fact ranked by its own and its source episodes' evidence,
    current first) then KG entities (cosine), labelled S1.., within a token budget. Raw episodes stay
    out: an answer cites consolidated facts."""
    units = search_memory(query, "both", 2 * MAX_FACTS, user_id, settings=settings, con=con, embedder=embedder)
    items = [(h.id, "facts", h.text, h.created_at) for h in units if h.table == "facts"][:MAX_FACTS]
    vectors, embedder = embed_query(settings, [query], embedder)
    items += candidates.retrying(_entities, con, settings, embedder, vectors[0], user_id)
    sources: list[Source] = []
    used = 0
    for ident, table, text, created_at in items:
        n = count_tokens(text) + 4
        if used + n > budget:
            continue
        used += n
        sources.append(Source(f"S{len(sources) + 1}", ident, table, text, created_at))
    return sources


def _entities(con, settings: Settings, embedder: Any, qvec, user_id: str) -> list[tuple[str, str, str, Any]]:
    index = CACHE.get(con, settings.db_path, "kg_entities", user_id, embedder.model, embedder.dim)
    rows, sims = index.vector_top(qvec, MAX_ENTITIES)
    f = candidates.Filters(user_id=user_id, now=clock.now(), decay_rate=settings.decay_rate,
                                 min_confidence=settings.deprecate_below)
    kept = candidates.fetch(con, index, rows[sims >= settings.min_floor], f)
    return [(i, "kg_entities", kept[i]["text"], kept[i]["created_at"]) for i in (index.ids[r] for r in rows) if i in kept]


def build_prompt(query: str, sources: list[Source], summary: str | None, history: list[tuple]) -> str:
    """The grounded-answer prompt: rules, the sources and the conversation so far as quoted data, the question."""
    lines = [
        "Answer the question using ONLY the sources below. Cite at least two sources: for each, give its",
        "label (e.g. S1) and the exact words from its text you rely on. If the sources do not answer the question,",
        "reply with an empty answer and no citations. Do not add facts that are not in the sources.",
        DATA_RULE,
        "",
        "Sources:",
        data_block([memory_record(s.id, _SOURCE_TYPES.get(s.table, s.table), s.created_at, s.text, label=s.label)
                    for s in sources]),
    ]
    conversation = [{"type": "conversation_summary", "text": summary}] if summary else []
    conversation += [{"type": "exchange", "seq": seq, "question": q, "answer": a or "(refused)"}
                     for seq, q, a, _ in history[-5:]]
    if conversation:
        lines += ["", "Conversation summary and recent exchanges (context only, not sources):", data_block(conversation)]
    lines += ["", f"Question (a JSON string): {json.dumps(query, ensure_ascii=False)}"]
    return "\n".join(lines)


_SOURCE_TYPES = {"facts": "fact", "kg_entities": "kg_entity"}


def _refusal(reason: str, sources: list[dict] | None = None, coverage: float | None = None,
             confidence: float | None = None) -> dict[str, Any]:
    return {"answer": None, "refused": True, "reason": reason, "sources": sources or [],
            "coverage": coverage, "confidence": confidence}


def verify(reply: GroundedAnswer, sources: list[Source]) -> dict[str, Any]:
    """Check the reply against the sources: quotes must occur in the cited source; >= 2 sources; coverage."""
    by_label = {s.label: s for s in sources}
    cited: dict[str, dict[str, Any]] = {}
    for c in reply.citations:
        src = by_label.get(c.source.strip().strip("[]"))
        quote = normalize(c.quote)
        if src is None or len(quote) < 3 or quote not in normalize(src.text):
            continue  # unverifiable citation: ignored, never trusted
        cited.setdefault(src.id, {"id": src.id, "table": src.table, "label": src.label, "text": src.text,
                                  "quote": c.quote})
    answer = reply.answer.strip()
    confidence = float(reply.confidence)
    found = list(cited.values())
    if not answer:
        return _refusal("the model found no answer in the sources", found, None, confidence)
    coverage = grounding_coverage(answer, [s["text"] for s in found])
    if len(found) < MIN_CITED_SOURCES:
        return _refusal(f"{len(found)} verified citation(s); need {MIN_CITED_SOURCES}", found, coverage, confidence)
    if coverage < MIN_COVERAGE:
        return _refusal(f"coverage {coverage:.2f} of the answer by its cited sources is below {MIN_COVERAGE}",
                        found, coverage, confidence)
    return {"answer": answer, "refused": False, "reason": None, "sources": found, "coverage": coverage,
            "confidence": confidence}


def grounding_coverage(answer: str, cited_texts: list[str]) -> float:
    """Share of the answer's content words (stemmed, stopwords dropped) present in the cited texts."""
    words = tokenize(answer)
    if not words:
        return 0.0
    support = {t for text in cited_texts for t in tokenize(text)}
    return round(sum(w in support for w in words) / len(words), 4)


def rolling_summary(previous: str | None, exchanges: list[tuple]) -> str:
    """An extractive summary: the previous one plus one line per exchange, newest kept within SUMMARY_CHARS."""
    lines = [previous] if previous else []
    for _, q, a, refused in exchanges:
        first = (a or "").strip().split(". ")[0] if not refused else "(refused)"
        lines.append(f"Q: {q.strip()} -> A: {first}")
    text = "\n".join(lines)
    return text[-SUMMARY_CHARS:] if len(text) > SUMMARY_CHARS else text

