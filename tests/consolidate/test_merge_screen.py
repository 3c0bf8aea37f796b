"""The merge rule over a batch: the same scores and decisions as pair_rules reading one pair at a time."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.consolidate import merge_screen, pair_rules

WORDS = ("caroline adopted a dog in may she loves painting sunsets the standup is at every weekday "
         "melanie hates camping lives lisbon porto stopped drinking coffee morning running runs ran "
         "doesn't never no not with without into out of on off red blue dark blonde 9:30 10:30 2023 3 ").split()
NAMES = ("Caroline", "Melanie", "Lisbon", "Porto", "May", "Zoë", "Σωκράτης", "O'Brien")


def _sentence(rng: random.Random) -> str:
    out = [rng.choice(WORDS) for _ in range(rng.randint(0, 14))]
    for _ in range(rng.randint(0, 2)):
        out.insert(rng.randint(0, len(out)), rng.choice(NAMES))
    text = rng.choice((" ", "  ", " \t", "\n ")).join(out) if rng.random() < 0.2 else " ".join(out)
    if rng.random() < 0.3:
        text = f"{rng.choice(NAMES)}: {text}"
    return text + rng.choice(("", ".", "!", " ΣΑΣ", "’s", "…"))


def _variant(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(words))
        words[i] = rng.choice((rng.choice(WORDS), rng.choice(NAMES), words[i].upper(), ""))
    return " ".join(words)


def _pairs(seed: int, n: int) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = _sentence(rng)
        b = _variant(rng, a) if rng.random() < 0.7 else _sentence(rng)
        out.append((a, b, rng.uniform(0.6, 1.0)))
    out += [("", "", 0.9), ("ok", "ok", 0.99), ("Caroline: I paint", "I paint", 0.95), ("abc", "abcd", 0.8)]
    return out


def _per_pair(a: str, b: str, cosine: float) -> float:
    return sum(w * x for w, x in zip(pair_rules.MERGE_COEF, pair_rules._leading_features(a, b, cosine), strict=False))


def test_scores_are_the_per_pair_floats() -> None:
    pairs = _pairs(1, 3000)
    scores = merge_screen.leading_scores(pairs)
    assert sum(s is None for s in scores) < len(pairs) // 4  # this corpus has "may" and "May" often
    assert [s for s in scores if s is not None] == [_per_pair(*p) for p, s in zip(pairs, scores, strict=True)
                                                    if s is not None]


def test_decisions_are_the_per_pair_rule() -> None:
    pairs = [(a, b, c, 0.7) for a, b, c in _pairs(2, 3000)]
    batch = merge_screen.same_statements(pairs)
    assert batch == [pair_rules.same_statement(*p) for p in pairs]
    assert 0 < sum(batch) < len(pairs)


def test_a_word_that_is_a_name_only_in_the_other_text_goes_to_the_per_pair_rule() -> None:
    pairs = [("We visited may and june", "We visited May and June", 0.95), ("a b c d", "a b c e", 0.9)]
    scores = merge_screen.leading_scores(pairs)
    assert scores[0] is None and scores[1] == _per_pair(*pairs[1])
    assert merge_screen.same_statements([(*p, 0.7) for p in pairs]) == [
        pair_rules.same_statement(*p, 0.7) for p in pairs]


def test_pairs_below_the_cosine_floor_are_not_read() -> None:
    assert merge_screen.same_statements([("same text", "same text", 0.5, 0.7)]) == [False]
    assert merge_screen.same_statements([]) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=40), st.floats(0.0, 1.0)), min_size=1, max_size=8))
def test_any_text_scores_as_per_pair(pairs: list[tuple[str, str, float]]) -> None:
    for p, s in zip(pairs, merge_screen.leading_scores(pairs), strict=True):
        assert s is None or s == _per_pair(*p)


def test_ngram_sets_of_a_large_alphabet_are_renumbered_to_the_same_sets() -> None:
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 12, 300)
    symbols = rng.integers(0, 40, int(lengths.sum()))
    left, right = rng.integers(0, 300, 500), rng.integers(0, 300, 500)
    small = merge_screen._ngram_sets(symbols, lengths, 3, 40)
    # a base whose cube passes 2**63 takes the renumbering branches (n-grams and keys)
    large = merge_screen._ngram_sets(symbols, lengths, 3, 1 << 22)
    for got, want in zip(merge_screen._overlap(large, left, right), merge_screen._overlap(small, left, right),
                         strict=True):
        assert np.array_equal(got, want)
    assert small.nnz == large.nnz > 0
