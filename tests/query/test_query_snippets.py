"""Retrieve spec pure parts: sentence cuts, trust tiers, slot allocation."""

from __future__ import annotations

import pytest

from engram.query.retrieve import Candidate, allocate
from engram.query.snippets import cut_at_sentence, trust_tier


def test_short_text_is_kept_whole_with_offsets():
    assert cut_at_sentence("  Hello there.  ") == ("Hello there.", 2, 14)


def test_long_text_is_cut_at_the_last_sentence_end_within_800():
    sentence = "This sentence has exactly forty chars!! "  # 40 chars
    text = sentence * 30  # 1200 chars
    piece, start, end = cut_at_sentence(text)
    assert len(piece) <= 800 and piece.endswith("!!")
    assert text[start:end] == piece
    assert len(piece) == 40 * 20 - 1


def test_text_without_sentence_end_is_cut_on_whitespace():
    text = "word " * 300
    piece, _, _ = cut_at_sentence(text)
    assert len(piece) <= 800 and piece.endswith("word") and not piece.endswith(" ")


@pytest.mark.parametrize(
    ("table", "conf", "origin", "tier"),
    [("facts", 0.9, None, "green"), ("facts", 0.6, None, "amber"), ("facts", 0.35, None, "red"),
     ("kg_entities", 0.7, None, "green"), ("episodes", None, "human", "amber"),
     ("episodes", None, "tool", "amber"), ("episodes", None, "model", "red")],
)
def test_trust_tier(table, conf, origin, tier):
    assert trust_tier(table, conf, origin) == tier


def cands(table: str, n: int, base: float) -> list[Candidate]:
    return [Candidate(table, {"id": f"{table}{i}"}, base - i * 0.01, f"{table}{i}") for i in range(n)]


@pytest.mark.parametrize(
    ("n_kg", "n_th", "top_k", "mix", "want_kg", "want_th"),
    [
        (20, 20, 10, 0.6, 6, 4),   # the spec's example
        (2, 20, 10, 0.6, 2, 8),    # KG underflow: thoughts backfill
        (20, 1, 10, 0.6, 9, 1),    # thought underflow: KG backfills
        (20, 20, 10, 1.0, 9, 1),   # at least one per source when both exist
        (20, 20, 10, 0.0, 1, 9),
        (0, 20, 10, 0.6, 0, 10),
        (3, 2, 10, 0.6, 3, 2),     # fewer than top_k in total
    ],
)
def test_slot_allocation(n_kg, n_th, top_k, mix, want_kg, want_th):
    chosen = allocate(cands("facts", n_kg, 0.9), cands("episodes", n_th, 0.95), top_k, mix)
    assert sum(c.is_kg for c in chosen) == want_kg
    assert sum(not c.is_kg for c in chosen) == want_th
    assert [c.score for c in chosen] == sorted((c.score for c in chosen), reverse=True)
