"""The valence codes a night screens its pairs with: a pair they turn down is one the rules answer None."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.consolidate import pair_rules
from engram.text.sentences import _negations, valence_conflict

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


def _screens(pairs: list[tuple[str, str, float]]) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([pair_rules.valence_code(x) for x, _, _ in pairs], np.int64)
    b = np.array([pair_rules.valence_code(y) for _, y, _ in pairs], np.int64)
    return pair_rules.codes_may_conflict(a, b), pair_rules.codes_may_contradict(a, b)


def test_pairs_the_codes_turn_down_get_no_reason_from_the_rules() -> None:
    pairs = _pairs(3, 4000)
    conflict, contradict = _screens(pairs)
    valence = [valence_conflict(a, b) for a, b, _ in pairs]
    reasons = [pair_rules.contradiction(a, b, c, 0.8) for a, b, c in pairs]
    assert all(v is None for v, ok in zip(valence, conflict, strict=True) if not ok)
    assert all(r is None for r, ok in zip(reasons, contradict, strict=True) if not ok)
    assert 0.05 < 1 - contradict.mean() < 0.95  # the screen turns some pairs down and passes others
    assert {"negation", "antonym", "different value"} <= set(valence)
    assert {"negation", "antonym", "different value", "cessation"} <= set(reasons)


def test_negations_count_every_negation_token() -> None:
    assert _negations("I don't think it isn't never no") == 4
    assert _negations("Not now, not ever, nobody") == 3
    assert _negations("I can't wait!") == 0  # an idiom, not a denial
    assert _negations("We went to the zoo") == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=40), st.floats(0.0, 1.0)), min_size=1, max_size=8))
def test_any_text_turned_down_gets_no_reason(pairs: list[tuple[str, str, float]]) -> None:
    conflict, contradict = _screens(pairs)
    for (a, b, c), may_conflict, may_contradict in zip(pairs, conflict, contradict, strict=True):
        assert may_conflict or valence_conflict(a, b) is None
        assert may_contradict or pair_rules.contradiction(a, b, c, 0.7) is None


def test_cessation_reads_any_case() -> None:
    ends = pair_rules._ends.__wrapped__
    assert ends("I STOPPED drinking coffee") and ends("She No Longer lives here") and ends("Zoë gave up smoking")
    assert not ends("I drink coffee every morning") and not ends("Zoë drinks coffee")
    assert ends("ſtopped") == bool(pair_rules._CESSATION.search("ſtopped"))  # re.I's folding, kept for non-ASCII
