"""The contradiction and valence rules over a batch: the answers pair_rules gives one pair at a time."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.consolidate import pair_rules
from engram.text.sentences import _negations, valence_conflict, valence_conflicts

WORDS = ("i she caroline loves hates likes dislikes drinking coffee every morning stopped quit no longer "
         "not never no don't isn't doesnt the standup is at 9:30 10:30 lives in used to always married "
         "divorced open closed can't wait no matter red car 2023 3 4 with without").split()
NAMES = ("Caroline", "Melanie", "Lisbon", "Porto", "Zoë", "Nate")


def _sentence(rng: random.Random) -> str:
    out = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
    for _ in range(rng.randint(0, 2)):
        out.insert(rng.randint(0, len(out)), rng.choice(NAMES))
    text = " ".join(out)
    return f"{rng.choice(NAMES)}: {text}" if rng.random() < 0.3 else text.capitalize()


def _pairs(seed: int, n: int) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = _sentence(rng)
        words = a.split(" ")
        for _ in range(rng.randint(0, 3)):
            words[rng.randrange(len(words))] = rng.choice(WORDS + list(NAMES))
        out.append((a, " ".join(words) if rng.random() < 0.7 else _sentence(rng), rng.uniform(0.4, 1.0)))
    return out


def test_valence_conflicts_are_the_per_pair_rule() -> None:
    pairs = [(a, b) for a, b, _ in _pairs(3, 4000)]
    batch = valence_conflicts(pairs)
    assert batch == [valence_conflict(a, b) for a, b in pairs]
    assert {"negation", "antonym", "different value"} <= set(batch) and None in batch


def test_contradictions_are_the_per_pair_rule() -> None:
    pairs = [(a, b, c, 0.8) for a, b, c in _pairs(4, 4000)]
    batch = pair_rules.contradictions(pairs)
    assert batch == [pair_rules.contradiction(*p) for p in pairs]
    assert {"negation", "antonym", "different value", "cessation"} <= set(batch) and None in batch


def test_negations_count_every_negation_token() -> None:
    assert _negations("I don't think it isn't never no") == 4
    assert _negations("Not now, not ever, nobody") == 3
    assert _negations("I can't wait!") == 0  # an idiom, not a denial
    assert _negations("We went to the zoo") == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=40), st.floats(0.0, 1.0)), min_size=1, max_size=8))
def test_any_text_answers_as_per_pair(pairs: list[tuple[str, str, float]]) -> None:
    assert valence_conflicts([(a, b) for a, b, _ in pairs]) == [valence_conflict(a, b) for a, b, _ in pairs]
    assert pair_rules.contradictions([(a, b, c, 0.7) for a, b, c in pairs]) == [
        pair_rules.contradiction(a, b, c, 0.7) for a, b, c in pairs]


def test_cessation_reads_any_case() -> None:
    ends = pair_rules._ends.__wrapped__
    assert ends("I STOPPED drinking coffee") and ends("She No Longer lives here") and ends("Zoë gave up smoking")
    assert not ends("I drink coffee every morning") and not ends("Zoë drinks coffee")
    assert ends("ſtopped") == bool(pair_rules._CESSATION.search("ſtopped"))  # re.I's folding, kept for non-ASCII
