"""prefetch_context: passive thresholds, diversity, and the per-tenant cache."""

from __future__ import annotations

import pytest

from engram.errors import InvalidInput
from engram.query.passive import prefetch_context, prefetched
from tests.query_seed import seed_episodes, seed_facts


def test_prefetch_caches_passive_hits_for_the_next_turn(settings, con):
    seed_facts(settings, con, [
        {"id": "strong", "text": "Lena is allergic to peanuts", "confidence": 0.9},
        {"id": "weak", "text": "Lena is allergic to cats maybe", "confidence": 0.4},  # active-only band
    ])
    seed_episodes(settings, con, [{"id": "ep", "content": "Lena said the peanut sauce made her ill"},
                                  {"id": "noise", "content": "The train leaves at nine"}])
    assert prefetched("u1", settings) is None
    result = prefetch_context(["hello", "what should we cook for Lena?", "no peanuts please"], "u1",
                              settings=settings, con=con, k=3)
    ids = [h.id for h in result.hits]
    assert "strong" in ids and "ep" in ids and "weak" not in ids
    assert len(ids) <= 3
    assert prefetched("u1", settings).hits == result.hits
    assert prefetched("u2", settings) is None


def test_prefetch_rejects_empty_turns(settings, con):
    with pytest.raises(InvalidInput, match="recent_turns"):
        prefetch_context(["  "], "u1", settings=settings, con=con)
    with pytest.raises(InvalidInput, match="recent_turns"):
        prefetch_context("just a string", "u1", settings=settings, con=con)


def test_prefetch_offers_a_matching_instruction_first(settings, con):
    seed_facts(settings, con, [
        {"id": "rule", "text": "Always use APA citation style when the user asks about references",
         "claim_type": "instruction", "confidence": 0.6},
        {"id": "paper", "text": "The user's paper cites twelve references about coastal erosion", "confidence": 0.9},
    ])
    seed_episodes(settings, con, [{"id": "ep", "content": "I need to list the references of my paper"}])
    result = prefetch_context(["How should I list the references in my paper?"], "u1", settings=settings, con=con, k=3)
    assert [h.id for h in result.hits][0] == "rule"
    assert {"rule", "paper"} <= {h.id for h in result.hits}
