"""The search's shortcuts for large tables answer as the plain path does: the nearest rows found on a
thread while BM25 scores the words (search.OVERLAP_NEAR_MIN), and the candidates' cosines with each other
in one product (search.PAIRWISE_MAX)."""

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


@pytest.mark.parametrize("shortcut", ["overlap_near", "pairwise_off"])
def test_a_shortcut_gives_the_plain_results(settings, con, monkeypatch, shortcut):
    seed_episodes(settings, con, [{"id": f"e{i}", "content": t, "session_id": "s"} for i, t in enumerate(TEXTS)])
    seed_facts(settings, con, [{"id": f"f{i}", "text": t} for i, t in enumerate(TEXTS)])
    plain = _results(settings, con)
    assert any(len(r) >= 2 for r in plain)
    if shortcut == "overlap_near":  # every table counts as large: its nearest rows come from the thread
        calls = []
        real = search._NEAR.submit
        monkeypatch.setattr(search, "OVERLAP_NEAR_MIN", 0)
        monkeypatch.setattr(search._NEAR, "submit", lambda fn, *a: calls.append(fn) or real(fn, *a))
        assert _results(settings, con) == plain
        assert calls
    else:  # every candidate compared with the shown ones by its own product
        monkeypatch.setattr(search, "PAIRWISE_MAX", 0)
        assert _results(settings, con) == plain
