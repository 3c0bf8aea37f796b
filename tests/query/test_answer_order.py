"""A question asking a quantity: memories that state one rank first, the latest value of a count first
(engram.query.answer_order), in pure logic and through search_memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pyarrow as pa

from engram.query import answer_order
from engram.query.search import search_memory
from engram.store import db
from tests.query_seed import T0, seed_episodes, seed_facts


@dataclass
class _Hit:
    id: str
    text: str
    score: float
    date: datetime | None = None
    created_at: datetime | None = None
    sources: list = field(default_factory=list)
    claim_type: str | None = None


def test_a_memory_stating_no_count_is_weighed_down_for_a_count_question() -> None:
    texts = ["The user is finalizing the essay draft by May 15", "The user has 4,500 words to submit"]
    assert answer_order.weights(texts, "How many words does my essay draft contain?").tolist() == [0.5, 1.0]
    assert answer_order.weights(texts, "Where is my essay draft?") is None  # no value asked for


def test_the_latest_count_of_a_thing_takes_the_first_of_its_places() -> None:
    old = _Hit("old", "The user has 4,500 words to submit", 0.3, date=T0)
    other = _Hit("other", "The user wrote about Lisbon", 0.2, date=T0 + timedelta(days=1))
    new = _Hit("new", "The final draft reached 4,700 words", 0.1, date=T0 + timedelta(days=9))
    got = answer_order.latest_count_first([old, other, new], "How many words does my draft have?")
    assert [h.id for h in got] == ["new", "other", "old"]
    assert [h.score for h in got] == [0.3, 0.2, 0.1]  # each takes its place's score: the order stays by score
    # the same value twice, or a question that asks no count: the order stays
    same = _Hit("same", "The user has 4,500 words to submit", 0.1, date=T0 + timedelta(days=9))
    assert answer_order.latest_count_first([old, same], "How many words?") == [old, same]
    assert answer_order.latest_count_first([old, new], "Where is my draft?") == [old, new]


def test_a_digest_is_no_count_of_its_own() -> None:
    old = _Hit("old", "The user has 4,500 words to submit", 0.3, date=T0)
    digest = _Hit("digest", "One topic across sessions:\n2024-03-15 user: I have 4,600 words now.", 0.2,
                  date=T0 + timedelta(days=9), claim_type="digest")
    assert answer_order.latest_count_first([old, digest], "How many words?") == [old, digest]


def test_a_hit_counting_two_things_is_placed_by_where_it_stands_now() -> None:
    a = _Hit("a", "The user has 10 sources and 5 drafts", 0.3, date=T0)
    b = _Hit("b", "The user has 12 sources", 0.2, date=T0 + timedelta(days=60))
    c = _Hit("c", "The user has 7 drafts", 0.1, date=T0 + timedelta(days=30))
    got = answer_order.latest_count_first([a, b, c], "How many drafts and sources do I have?")
    # sources: b (March) before a (January); drafts: then c (February) before a
    assert [h.id for h in got] == ["b", "c", "a"]


def test_an_episode_ranked_above_its_fact_is_not_shown_twice(settings, con) -> None:
    """A count question ranks the episode stating the count above the fact taken from it that states none:
    the fact, every source of it shown already, is not shown again."""
    seed_episodes(settings, con, [{"id": "ep", "content": "My essay draft has 4,500 words and I am finalizing it",
                                   "created_at": T0.isoformat()}])
    seed_facts(settings, con, [{"id": "fact", "text": "The user is finalizing the essay draft"}])
    with db.registered(con, "incoming_sources", pa.Table.from_pylist([
            {"user_id": "u1", "fact_id": "fact", "episode_id": "ep", "relation": "extracted_from",
             "similarity": None, "run_id": "seed"}])):
        db.execute(con, "queries/store/insert_fact_sources")
    plain = search_memory("Where is my essay draft?", "both", 10, "u1", settings=settings, con=con)
    assert [h.id for h in plain] == ["fact"] and [s["id"] for s in plain[0].sources] == ["ep"]
    counted = search_memory("How many words does my essay draft have?", "both", 10, "u1", settings=settings,
                            con=con)
    assert [h.id for h in counted] == ["ep"]


def test_search_answers_the_current_count_first(settings, con) -> None:
    seed_episodes(settings, con, [
        {"id": "plan", "content": "I'm finalizing my essay draft for the journal by May 15",
         "created_at": T0.isoformat()},
        {"id": "old", "content": "My essay draft has 4,500 words so far", "created_at": (T0 + timedelta(days=1)).isoformat()},
        {"id": "new", "content": "Good news: the essay draft reached 4,700 words",
         "created_at": (T0 + timedelta(days=20)).isoformat()},
    ])
    hits = search_memory("How many words does my essay draft contain?", "episodes", 10, "u1",
                         settings=settings, con=con)
    ids = [h.id for h in hits]
    assert ids.index("new") < ids.index("old")
    assert ids.index("new") < ids.index("plan")
    shown = [h.relevance for h in hits]
    assert shown == sorted(shown, reverse=True)  # the relevance printed is still the order
