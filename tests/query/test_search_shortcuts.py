"""The search's shortcut for large tables answers as the plain path does: the nearest rows found on a
thread while BM25 scores the words (search.OVERLAP_NEAR_MIN)."""

from __future__ import annotations

import pytest

from engram.index.vector_index import CACHE
from engram.query import search, search_memory
from tests.query_seed import seed_episodes, seed_facts

TEXTS = [
    "My sister moved to Oslo in March", "My sister lives in Oslo now", "My brother moved to Bergen in May",
    "The quarterly report is due on Friday", "The quarterly report was due on Thursday",
    "I adopted a cat named Milo last spring", "Milo the cat sleeps all day", "I do not like spicy food",
    "I like spicy food", "We met for coffee at 9:30", "We met for coffee at 10:30",
]
QUERIES = ["where does my sister live?", "when is the report due", "the cat Milo", "spicy food", "coffee time"]


def _results(settings, con):
    CACHE.clear()
    return [[(h.id, h.score, h.absorbed, h.status) for h in
             search_memory(q, "both", 4, "u1", settings=settings, con=con)] for q in QUERIES]


def test_the_nearest_rows_found_on_a_thread_give_the_plain_results(settings, con, monkeypatch):
    seed_episodes(settings, con, [{"id": f"e{i}", "content": t, "session_id": "s"} for i, t in enumerate(TEXTS)])
    seed_facts(settings, con, [{"id": f"f{i}", "text": t} for i, t in enumerate(TEXTS)])
    plain = _results(settings, con)
    assert any(len(r) >= 2 for r in plain)
    calls = []
    real = search._NEAR.submit
    monkeypatch.setattr(search, "OVERLAP_NEAR_MIN", 0)  # every table counts as large
    monkeypatch.setattr(search._NEAR, "submit", lambda fn, *a: calls.append(fn) or real(fn, *a))
    assert _results(settings, con) == plain
    assert calls


def test_a_failing_lexical_step_leaves_no_search_running(settings, con, monkeypatch):
    from engram.index.vector_index import TableIndex

    seed_episodes(settings, con, [{"id": f"e{i}", "content": t} for i, t in enumerate(TEXTS)])
    monkeypatch.setattr(search, "OVERLAP_NEAR_MIN", 0)
    futures = []
    real = search._NEAR.submit
    monkeypatch.setattr(search._NEAR, "submit", lambda fn, *a: futures.append(real(fn, *a)) or futures[-1])

    def fail(*args, **kwargs):
        raise RuntimeError("lexical step failed")

    monkeypatch.setattr(TableIndex, "lexical_scores", fail)
    CACHE.clear()
    with pytest.raises(RuntimeError, match="lexical step failed"):
        search_memory("sister Oslo", "episodes", 3, "u1", settings=settings, con=con)
    assert futures and all(f.done() for f in futures)
