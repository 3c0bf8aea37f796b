"""A question asking a quantity: memories that state one rank first, the latest value of a count first
(engram.query.answer_order), in pure logic and through search_memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from engram.query import answer_order
from engram.query.search import search_memory
from tests.query_seed import T0, seed_episodes


@dataclass
class _Hit:
    id: str
    text: str
    score: float
    date: datetime | None = None
    created_at: datetime | None = None
    sources: list = field(default_factory=list)


def test_a_memory_stating_no_count_is_weighed_down_for_a_count_question() -> None:
    hits = [_Hit("plan", "The user is finalizing the essay draft by May 15", 0.16),
            _Hit("count", "The user has 4,500 words to submit", 0.10)]
    answer_order.weigh(hits, "How many words does my essay draft contain?")
    assert [h.score for h in hits] == [0.08, 0.10]
    answer_order.weigh(hits, "Where is my essay draft?")  # no value asked for: unchanged
    assert [h.score for h in hits] == [0.08, 0.10]


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
