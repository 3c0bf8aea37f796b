"""Issue 45 #4: a fact from the last night reaches passive context, and the quoting preamble fits a small budget."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.llm.prompt_quote import (
    DATA_RULE,
    SHORT_DATA_RULE,
    memory_record,
    read_data_block,
)
from engram.query.passive import build_context, prefetch_context
from engram.query.search import search_memory
from engram.query.wordpiece import count_tokens
from tests.query_seed import seed_facts


def test_a_fact_from_the_last_night_reaches_passive_context(settings, con):
    now = datetime.now()
    last_night, two_months = now - timedelta(hours=8), now - timedelta(days=60)
    seed_facts(settings, con, [
        # a new fact of one episode, written by last night's run: initial confidence 0.5
        {"id": "fresh", "text": "Lena drinks oat milk in her coffee", "confidence": 0.5, "confidence_at": last_night},
        # the same, never reinforced since: 0.5 e^(-0.002 * 60) = 0.44, active search only
        {"id": "stale", "text": "Lena drinks oat milk with cereal", "confidence": 0.5, "confidence_at": two_months},
        # halved by a contradiction last night (0.8 -> 0.4): weakened, not fresh
        {"id": "halved", "text": "Lena drinks oat milk every day", "confidence": 0.4, "confidence_at": last_night},
        {"id": "dep", "text": "Lena drinks oat milk at night", "confidence": 0.9, "status": "deprecated",
         "confidence_at": last_night},
    ])
    passive = search_memory("oat milk Lena drinks", "facts", 10, "u1", settings=settings, con=con, mode="passive")
    assert [h.id for h in passive] == ["fresh"]
    active = search_memory("oat milk Lena drinks", "facts", 10, "u1", settings=settings, con=con)
    assert {h.id for h in active} == {"fresh", "stale", "halved"}
    fresh = next(h for h in passive if h.id == "fresh")
    assert fresh.confidence < 0.5  # shown as read, decayed to now: the grace only decides the band

    pre = prefetch_context(["what milk does Lena drink?"], "u1", settings=settings, con=con, k=3)
    out = build_context(["what milk does Lena drink?"], budget=1500, memories=pre)
    assert [m["id"] for m in out["sections"]["memories"]] == ["fresh"]


def test_a_quoted_fact_is_dated_when_what_it_states_holds_not_when_the_night_wrote_it(settings, con):
    said = datetime(2023, 5, 7)
    seed_facts(settings, con, [{"id": "f", "text": "Lena drinks oat milk in her coffee", "confidence": 0.5,
                                "confidence_at": datetime.now(), "valid_from": said}])
    pre = prefetch_context(["what milk does Lena drink?"], "u1", settings=settings, con=con, k=3)
    out = build_context(["what milk does Lena drink?"], budget=1500, memories=pre)
    assert [(m["id"], m["date"]) for m in out["sections"]["memories"]] == [("f", "7 May 2023")]


def _memories(n: int) -> list[dict]:
    return [memory_record(f"fact_9c1e2a7b3d4f5a6b{i}", "fact", "2026-10-15T09:00:00",
                          "The user drinks green tea every morning before work.") for i in range(n)]


def test_a_small_budget_quotes_memories_under_the_short_rule():
    out = build_context(["what does the user drink in the morning?"], budget=200, memories=_memories(3))
    assert out["sections"]["memories"], out["dropped"]  # the full rule left room for none of them
    assert out["text"].count(SHORT_DATA_RULE) == 1 and DATA_RULE not in out["text"]
    assert read_data_block(out["text"]) == out["sections"]["memories"]
    assert out["total_tokens"] <= 200
    assert count_tokens(SHORT_DATA_RULE) <= 20


def test_a_large_budget_keeps_the_full_rule():
    out = build_context(["what does the user drink in the morning?"], budget=1500, memories=_memories(3))
    assert DATA_RULE in out["text"] and out["dropped"]["memories"] == 0
