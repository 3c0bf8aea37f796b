"""Knowledge update evaluation on SituatedQA (temporal): does the current answer rank first, and as_of?

Every dated answer start of a question becomes an episode "<question>? <answer>." created at that
date, all questions in one tenant. Before consolidation the episodes are searched; after the nightly
stages (no LLM) the facts. A query is right when the top hit states the expected answer: for a
plain query the latest answer; for an as_of query the answer valid at that date. Baseline: BM25 over
the same episodes (no notion of time), measured in the same run.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.locomo import plain_tokens
from bench.quality.quality_data import TemporalQuestion, answer_at, load_situatedqa
from bench.quality.quality_embed import CachedEmbedder
from bench.quality.quality_store import (
    consolidate_tenant,
    fact_sources,
    fact_table,
    ingest,
    open_temp_store,
)
from engram.index.bm25 import BM25
from engram.query.search import search_memory
from engram.store import db

USER = "situatedqa"


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def states(text: str, answer: str) -> bool:
    """Whether the text states the answer (normalised whole-word containment)."""
    a = _norm(answer)
    return bool(a) and f" {a} " in f" {_norm(text)} "


def episode_text(q: TemporalQuestion, answer: str) -> str:
    """The episode a question's answer start becomes."""
    return f"{q.question.rstrip('?')}? {answer}."


def run(embedder: CachedEmbedder, path: Path, as_of: datetime, max_questions: int | None = None,
        max_probes_per_question: int = 2, llm: str = "none") -> dict[str, Any]:
    """Latest-answer@1 and as_of@1 before (episodes) and after (facts; both = the default search) consolidation, plus the BM25 baseline."""
    qs = load_situatedqa(path)
    if max_questions is not None:
        qs = qs[:max_questions]
    records = []
    for q in qs:
        for n, (when, answer) in enumerate(q.starts):
            records.append({"id": f"sqa:{q.id}:{n}", "user_id": USER, "session_id": f"sqa:{q.id}", "kind": "event",
                            "role": "note", "origin": "tool", "content": episode_text(q, answer), "created_at": when})
    probes = [(q, d, answer_at(q, d)) for q in qs for d, _ in q.probes[:max_probes_per_question]]
    store = open_temp_store("situatedqa", embedder, llm)
    try:
        ingest(store, records, embedder)
        embedder.embed([q.question for q in qs])
        bm25 = BM25([plain_tokens(r["content"]) for r in records])
        out: dict[str, Any] = {"questions": len(qs), "episode_count": len(records), "as_of_probes": len(probes)}

        def top_text(con: Any, query: str, table: str, when: datetime | None) -> str:
            hits = search_memory(query, table, 1, USER, as_of=when, settings=store.settings, con=con, embedder=embedder)
            return hits[0].text if hits else ""

        def bm25_top(query: str, when: datetime | None) -> str:
            scores = bm25.score(plain_tokens(query)).copy()
            if when is not None:
                scores[[r["created_at"] > when for r in records]] = -np.inf
            return records[int(np.argmax(scores))]["content"] if np.isfinite(scores.max()) else ""

        out["baseline_bm25"] = _score(qs, probes, lambda q, when: bm25_top(q, when))
        with db.open_reader(store.settings) as con:
            out["episodes"] = _score(qs, probes, lambda q, when: top_text(con, q, "episodes", when))
        counts = consolidate_tenant(store, USER, embedder, as_of)
        facts = fact_table(store, USER)
        with db.open_reader(store.settings) as con:
            out["facts"] = _score(qs, probes, lambda q, when: top_text(con, q, "facts", when))
            # the default search: memory units of facts and episodes together
            out["both"] = _score(qs, probes, lambda q, when: top_text(con, q, "both", when))
        out["consolidation"] = {k: v for k, v in counts.items() if k != "confidence_after_extract"}
        out["fact_statuses"] = {s: sum(f["status"] == s for f in facts) for s in sorted({f["status"] for f in facts})}
        answer_of = {r["id"]: (r["session_id"], r["content"]) for r in records}
        srcs = fact_sources(store, USER, ("extracted_from",))
        active = [f for f in facts if f["status"] == "active"]
        spans = [{answer_of[e] for e in srcs.get(f["id"], ()) if e in answer_of} for f in active]
        out["active_facts"] = len(active)
        # a fact resting on two answers of one question conflates an update with what it replaced
        out["facts_conflating_an_update"] = sum(
            1 for span in spans if len({c for _, c in span}) > len({q for q, _ in span}))
        out["facts_spanning_questions"] = sum(1 for span in spans if len({q for q, _ in span}) > 1)
        out["questions_with_a_fact"] = len({q for span in spans for q, _ in span})
        return out
    finally:
        store.close()


def _score(qs: list[TemporalQuestion], probes: list[tuple[TemporalQuestion, datetime, str]], top: Any
           ) -> dict[str, float]:
    latest = [top(q.question, None) for q in qs]
    stale = [any(states(t, a) for _, a in q.starts if a != q.current) and not states(t, q.current)
             for q, t in zip(qs, latest, strict=True)]
    as_of = [states(top(q.question, d), want) for q, d, want in probes]
    return {
        "latest_at_1": float(np.mean([states(t, q.current) for q, t in zip(qs, latest, strict=True)])) if qs else float("nan"),
        "stale_at_1": float(np.mean(stale)) if qs else float("nan"),
        "as_of_at_1": float(np.mean(as_of)) if as_of else float("nan"),
    }
