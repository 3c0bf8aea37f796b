"""Pure consolidation logic: valence conflicts, claim types, confidence arithmetic, merge planning."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from itertools import pairwise

import numpy as np
import pytest

from engram.consolidate.merge_plan import (
    FactInfo,
    components,
    plan_merges,
    similar_pairs,
)
from engram.consolidate.scoring import (
    initial_confidence,
    reinforced,
    reinforced_array,
)
from engram.decay import decayed
from engram.text.sentences import (
    best_sentence,
    claim_type,
    self_containedness,
    valence_conflict,
)


@pytest.mark.parametrize(("a", "b", "why"), [
    ("I love hiking", "I do not love hiking", "negation"),
    ("Bob never drinks coffee", "Bob drinks coffee", "negation"),
    ("I love hiking", "I hate hiking", "antonym"),
    ("The standup is at 9:30 every day", "The standup is at 10:30 every day", "different value"),
    ("I love hiking", "I love hiking a lot", None),
    # negations are counted: two negated clauses against none is still a conflict
    ("The woman is not leaning on the wall and is not playing", "The woman is leaning on the wall and is playing",
     "negation"),
    ("I don't like it and I don't want it", "I do not like it and I do not want it", None),
    ("I live in Lisbon now", "I live in Porto now", "different value"),  # a name swapped in one slot
    ("who won the derby? Secretariat.", "who won the derby? Monarchos.", "different value"),
    ("Caroline: I went to the support group", "Melanie: I went to the support group", None),  # speakers
    ("Alice moved to Lisbon with her sister Ana in May", "Alice moved to Porto in May after a long search",
     None),  # more than a slot differs
    ("The man is sitting on the bench", "The woman is sitting on the bench", None),  # dropped antonym pair
    # about the same thing in other words: content words, not function words, decide
    ("The team standup happens at 9:30 each weekday morning.", "Our standup is now at 10:30 every weekday morning.",
     "different value"),
    ("Joanna: Bye Nate!", "Nate: Bye Joanna!", None),  # vocatives of two speakers are no name swap
    ("Caroline: Good to see you!", "Caroline: Lucky you!", None),  # a sentence start after a speaker is no name
    ("Mia is 7 years old", "The bus leaves at 8 from the station near the old mill", None),  # little overlap
    # a content word swapped on each side: another thing, not another value of one thing
    ("when is the last time the padres made the playoffs? 1998.",
     "when is the last time the lions made the playoffs? 2016.", None),
    ("who holds the record for most triples in a season? Chief Wilson.",
     "who holds the record for most doubles in a season? Earl Webb.", None),
])
def test_valence_conflict(a: str, b: str, why: str | None) -> None:
    assert valence_conflict(a, b) == why
    assert valence_conflict(b, a) == why


def test_a_swapped_word_excuses_another_value_except_for_a_merge() -> None:
    a, b = ("when is the last time the padres made the playoffs? 1998.",
            "when is the last time the lions made the playoffs? 2016.")
    assert valence_conflict(a, b) is None
    assert valence_conflict(a, b, swap_excuses=False) == "different value"


@pytest.mark.parametrize(("text", "kind"), [
    ("I want to learn Rust", "goal"), ("I love jazz", "preference"),
    ("Maybe the shop is closed", "assumption"), ("Alice works at Acme", "fact"),
])
def test_claim_type(text: str, kind: str) -> None:
    assert claim_type(text) == kind


def test_best_sentence_skips_filler_and_questions() -> None:
    assert best_sentence("Hey! How are you? I moved to Lisbon last spring.") == "I moved to Lisbon last spring."
    assert self_containedness("What?") < self_containedness("Alice moved to Lisbon in May.")


def test_confidence_arithmetic() -> None:
    assert reinforced(0.5, 1, 0.05) == pytest.approx(0.525)
    assert reinforced(0.5, 3, 0.05) == pytest.approx(1 - 0.5 * 0.95 ** 3)
    assert initial_confidence(1, 0.5, 0.05) == 0.5
    assert initial_confidence(3, 0.5, 0.05) == pytest.approx(1 - 0.5 * 0.95 ** 2)
    t = datetime(2026, 1, 1)
    assert decayed(0.8, t, t + timedelta(days=10), 0.01) == pytest.approx(0.8 * math.exp(-0.1))
    assert decayed(0.8, t, t - timedelta(days=1), 0.01) == 0.8  # never grows backwards in time


def test_similar_pairs_in_blocks_equals_brute_force() -> None:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((37, 8)).astype(np.float32)
    c = rng.standard_normal((101, 8)).astype(np.float32)
    i, j, s = similar_pairs(q, c, 2.0, query_chunk=5, corpus_chunk=7)
    want = {(a, b) for a, b in zip(*np.nonzero(q @ c.T > 2.0), strict=True)}
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == want
    assert np.allclose(s, (q @ c.T)[i, j])


def test_similar_pairs_top_k_keeps_each_rows_nearest_above_the_threshold() -> None:
    rng = np.random.default_rng(1)
    q = rng.standard_normal((23, 8)).astype(np.float32)
    c = rng.standard_normal((90, 8)).astype(np.float32)
    i, j, s = similar_pairs(q, c, 0.5, top_k=3, query_chunk=4, corpus_chunk=11)
    scores = q @ c.T
    want = set()
    for a in range(len(q)):
        above = [b for b in np.argsort(-scores[a], kind="stable") if scores[a, b] > 0.5]
        want |= {(a, int(b)) for b in above[:3]}
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == want
    assert np.bincount(i, minlength=len(q)).max() <= 3 and len(want) > len(q)


def test_components_and_merge_plan() -> None:
    edges = [("a", "b"), ("b", "c"), ("x", "y")]
    agree = {frozenset(e) for e in edges}
    comps = components(edges)
    assert comps == [["a", "b", "c"], ["x", "y"]]
    facts = {
        "a": FactInfo("a", 0.7, "general", 2), "b": FactInfo("b", 0.7, "general", 1),
        "c": FactInfo("c", 0.4, "general", 3), "x": FactInfo("x", 0.5, "general", 1),
        "y": FactInfo("y", 0.55, "general", 2),
    }
    plan = plan_merges(comps, facts, set(), 0.6, agree)
    assert plan.merges == [("b", ["a", "c"])]  # tie on confidence: the older fact wins
    assert plan.reviews == [(["x", "y"], "no fact above confidence 0.6")]
    contested = plan_merges(comps, facts, {frozenset(("a", "c"))}, 0.6, agree)
    assert contested.merges == []  # a contradiction inside a component is never merged
    mixed = {**facts, "c": FactInfo("c", 0.4, "preference", 3)}
    assert plan_merges([["a", "b", "c"]], mixed, set(), 0.6, agree).reviews == [(["a", "b", "c"], "different categories")]


def test_a_fact_is_merged_only_into_a_winner_it_was_judged_the_same_as() -> None:
    # a chain: "a" same as "b", "b" same as "c", "c" same as "d"; "a" and "c" were never judged the same
    edges = [("a", "b"), ("b", "c"), ("c", "d")]
    facts = {k: FactInfo(k, conf, "general", rank)
             for k, conf, rank in (("a", 0.9, 1), ("b", 0.7, 2), ("c", 0.8, 3), ("d", 0.7, 4))}
    plan = plan_merges(components(edges), facts, set(), 0.6, {frozenset(e) for e in edges})
    assert plan.merges == [("a", ["b"]), ("c", ["d"])]
    assert plan.reviews == []
    low = {**facts, "c": FactInfo("c", 0.5, "general", 3), "d": FactInfo("d", 0.5, "general", 4)}
    plan = plan_merges(components(edges), low, set(), 0.6, {frozenset(e) for e in edges})
    assert plan.merges == [("a", ["b"])]
    assert plan.reviews == [(["c", "d"], "no fact above confidence 0.6")]


def test_a_long_chain_is_planned_as_direct_pairs_only() -> None:
    ids = [f"f{i:05d}" for i in range(1200)]
    edges = list(pairwise(ids))
    facts = {k: FactInfo(k, 0.9, "general", i) for i, k in enumerate(ids)}
    agree = {frozenset(e) for e in edges}
    plan = plan_merges(components(edges), facts, set(), 0.6, agree)
    merged = [x for winner, losers in plan.merges for x in (winner, *losers)]
    assert len(merged) == len(set(merged))  # no fact in two merges
    assert all(frozenset((w, x)) in agree for w, losers in plan.merges for x in losers)
    assert len(plan.merges) == 600  # the oldest takes its one neighbour, the next one starts again


def test_reinforced_array_gives_the_floats_of_reinforced() -> None:
    rng = np.random.default_rng(7)
    conf = rng.uniform(0.0, 1.0, 5000)
    supports = rng.integers(0, 40, 5000)
    for gain in (0.05, 0.3, 1 / 3):
        got = reinforced_array(conf, supports, gain)
        assert got.tolist() == [reinforced(float(c), int(k), gain) for c, k in zip(conf, supports, strict=True)]
    assert reinforced_array(np.zeros(0), np.zeros(0, np.int64), 0.05).shape == (0,)
