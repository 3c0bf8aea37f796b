"""Pair rules: when two facts say the same thing, and when they contradict."""

from __future__ import annotations

import pytest

from engram.consolidate import pair_rules
from engram.consolidate.pair_rules import (
    changed_detail,
    contradiction,
    same_statement,
    subject,
)
from engram.text.tokens import suffix_stem


@pytest.mark.parametrize(("a", "b", "cos", "expected"), [
    # near-identical restatements merge
    ("Caroline adopted a dog in May", "Caroline adopted a dog in May.", 0.99, True),
    ("Melanie loves pottery and painting", "Melanie loves painting and pottery", 0.97, True),
    # a paraphrase with the same words mostly kept
    ("The company said profits rose sharply in the second quarter",
     "The company said its profits rose sharply in the second quarter", 0.95, True),
    # below the cosine floor nothing merges
    ("Caroline adopted a dog in May", "Caroline adopted a dog in May.", 0.6, False),
    # negation, antonym, other number or name: not the same statement
    ("Caroline likes hiking", "Caroline does not like hiking", 0.93, False),
    ("Melanie loves camping", "Melanie hates camping", 0.9, False),
    ("The standup is at 9:30 every weekday", "The standup is at 10:30 every weekday", 0.97, False),
    ("Caroline lives in Lisbon", "Caroline lives in Porto", 0.9, False),
    # a swapped word, direction or role in a short statement (what the cosine merges on SICK)
    ("A few men in a competition are running outside", "A few men in a competition are running indoors", 0.87, False),
    ("Three men are jumping on a wall", "Three men are jumping off a wall", 0.96, False),
    ("The woman is picking up the kangaroo", "The kangaroo is picking up the woman", 0.97, False),
    ("Caroline likes running", "Caroline likes swimming", 0.88, False),
    # little lexical overlap: the model does not call it a paraphrase even at a high cosine
    ("Caroline went to a support group yesterday", "The meeting she attended helped a lot", 0.86, False),
])
def test_same_statement(a: str, b: str, cos: float, expected: bool) -> None:
    assert same_statement(a, b, cos, 0.7) is expected


@pytest.mark.parametrize(("a", "b", "cos", "expected"), [
    # negation between statements about the same thing: the cosine branch and the shared-words branch
    ("A man is playing a guitar", "A man is not playing a guitar", 0.9, "negation"),
    ("A man is playing a guitar", "There is no man playing a guitar", 0.7, "negation"),
    # shared words but too dissimilar, or little in common and below the threshold: no alarm
    ("A man is playing a guitar", "There is no man playing a guitar", 0.55, None),
    ("Joanna: Let me know if you try it.", "Joanna: I can't try it right now.", 0.75, None),
    # antonym and different value
    ("Melanie loves camping", "Melanie hates camping", 0.85, "antonym"),
    ("The standup is at 9:30 every weekday", "The standup is at 10:30 every weekday", 0.95, "different value"),
    # different subjects never contradict
    ("Caroline: I love pizza", "Melanie: I don't love pizza", 0.9, None),
    ("Caroline likes hiking", "Melanie does not like hiking", 0.9, None),
    # same subject, stated by name and by speaker prefix
    ("Caroline: I love pizza", "Caroline: I don't love pizza", 0.9, "negation"),
    # no valence difference: no contradiction however similar
    ("Caroline adopted a dog", "Caroline adopted a puppy", 0.95, None),
])
def test_contradiction(a: str, b: str, cos: float, expected: str | None) -> None:
    assert contradiction(a, b, cos, 0.8) == expected


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("A man is running outside", "A man is running indoors", "word swapped"),
    ("A boy is jumping into the water", "A boy is jumping out of the water", "direction swapped"),
    ("The dog is chasing the cat", "The cat is chasing the dog", "roles swapped"),
    ("A man is running outside", "A man is running outside today", None),  # an added detail, not a swap
    # a colour swapped, at any length; a spelling variant or a colour only one side names is no swap
    ("A blond child is going down a slide and throwing up his arms",
     "A child with dark hair is going down a slide and throwing up his arms", "colour swapped"),
    ("A blond kid in a green shirt is sitting on a wooden swing in the big park",
     "A blonde kid in a green shirt is sitting on a wooden swing in the big park", None),
    ("A dog is running through the white snow", "A dog is running through the snow", None),
    # long statements are left to the merge model: paraphrases swap words
    ("The association said 28 million DVDs were rented in the week that ended June 15 in the whole country",
     "The association said 28 million DVDs were rented in the week that closed June 15 in the whole country", None),
])
def test_changed_detail(a: str, b: str, expected: str | None) -> None:
    assert changed_detail(a, b) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Caroline: I love it", "caroline"),
    ("Caroline adopted a dog", "caroline"),
    ("Caroline's dog is called Max", "caroline"),
    ("A man is running", None),
    ("Two dogs run in the park", None),
    ("There is no man", None),
    ("Nobody is here", None),
    ("User 2 is not a vegan", "user 2"),  # a number after the name is part of it
    ("User 2's wife is a nurse", "user 2"),
    ("In 2019 Ann moved to Porto", None),  # a function word opens it: no one named
    ("June 2020 was a good month", "june"),  # a year is not part of a name
])
def test_subject(text: str, expected: str | None) -> None:
    assert subject(text) == expected


def test_statements_of_numbered_speakers_do_not_contradict_each_other() -> None:
    assert pair_rules.contradiction("User 1 is a vegan.", "User 2 is not a vegan.", 0.9, 0.8) is None
    assert pair_rules.contradiction("User 1 is a vegan.", "User 1 is not a vegan.", 0.9, 0.8) == "negation"


@pytest.mark.parametrize(("word", "expected"), [
    ("running", "run"), ("runs", "run"), ("stopped", "stop"), ("cities", "city"), ("glasses", "glass"),
    ("dogs", "dog"), ("Caroline's", "caroline"),
])
def test_suffix_stem(word: str, expected: str) -> None:
    assert suffix_stem(word.lower()) == expected


def test_merge_probability_is_monotone_in_cosine_and_overlap() -> None:
    a, b = "Caroline adopted a dog in May", "Caroline adopted a small dog in May"
    assert pair_rules.merge_probability(a, b, 0.9) > pair_rules.merge_probability(a, b, 0.7)
    assert pair_rules.merge_probability(a, a, 0.9) > pair_rules.merge_probability(a, b, 0.9)
    assert 0.0 < pair_rules.merge_probability(a, "Totally unrelated words here", 0.1) < 0.1


def test_merge_model_has_a_weight_for_every_feature() -> None:
    # a feature added without refitting (python -m bench.fit.fit_merge_model) must not be silently ignored
    features = pair_rules.merge_features("Caroline met Anna in Paris in 2019", "Caroline met Anna in Rome", 0.8)
    assert len(features) == len(pair_rules.MERGE_COEF)
    assert all(isinstance(x, float) and x == x for x in features)


def test_a_name_one_statement_lacks_lowers_the_merge_probability() -> None:
    a = "The company said profits rose sharply in the third quarter"
    with_name, other_name = f"{a} in Paris", f"{a} in Berlin"
    assert pair_rules.merge_probability(with_name, with_name, 0.95) > pair_rules.merge_probability(
        with_name, other_name, 0.95)


VALUE_TEXTS = [
    "The standup is at 9:30 every weekday", "The standup is at 10:30 every weekday", "Caroline lives in Lisbon",
    "Caroline lives in Porto", "Caroline: I live in Lisbon", "Melanie: I live in Porto", "I have 2 dogs and a cat",
    "I have 3 dogs and a cat", "We moved here in 2019", "We moved here in 2021 with Anna", "Bye Nate!",
    "Bye Joanna!", "I love pottery", "I do not love pottery", "The Lions won 24 to 10 against Detroit",
    "The Lions lost 10 to 24 against Detroit", "My sister lives in Paris now", "My sister lives in Rome now",
]


def test_may_differ_in_value_is_a_necessary_condition_of_a_different_value() -> None:
    from engram.text.sentences import may_differ_in_value, valence_conflict

    differ = 0
    for a in VALUE_TEXTS:
        for b in VALUE_TEXTS:
            why = valence_conflict(a, b)
            if not may_differ_in_value(a, b):
                assert why != "different value", (a, b)
            differ += why == "different value"
    assert differ >= 6  # numbers and names both exercised
    assert not may_differ_in_value("I love pottery", "I do not love pottery")


def test_the_model_shortcut_decides_as_the_full_model() -> None:
    texts = VALUE_TEXTS + ["Caroline adopted a dog in May", "Caroline adopted a dog in May.",
                           "The company said profits rose sharply in the second quarter",
                           "The company said its profits rose sharply in the second quarter, and it hired 200 people"]
    decided = []
    for a in texts:
        for b in texts:
            for cos in (0.72, 0.85, 0.97):
                full = pair_rules.merge_probability(a, b, cos) > pair_rules.MERGE_MIN_PROBABILITY
                assert pair_rules._model_merges(a, b, cos) == full, (a, b, cos)
                decided.append(full)
    assert any(decided) and not all(decided)


def _names_by_every_token(text: str) -> frozenset[str]:
    from engram.text.sentences import _TOKEN
    from engram.text.tokens import NOT_NAMES

    return frozenset(m.group().lower() for i, m in enumerate(_TOKEN.finditer(text))
                     if i > 0 and m.group()[0].isupper() and m.group().lower() not in NOT_NAMES)


@pytest.mark.parametrize("text", [
    "", "Hi", "i met ünal", "I met Ünal", "I met Anna in Paris", "3Rd place", "well-Known fact", "bar _Foo",
    "a \u2102omplex number", "x \u01c5emal", "Caroline: I live in Porto", "we love it", "O'Neil and McDonald",
])
def test_names_without_a_capital_past_the_first_word_is_empty_as_reading_every_token(text: str) -> None:
    from engram.text.sentences import names

    assert names(text) == _names_by_every_token(text)


@pytest.mark.parametrize(("older", "newer", "expected"), [
    # the newer statement ends what the older states
    ("I take the bus to work every day", "I stopped taking the bus to work; I cycle there now", True),
    ("I take the bus to work every day", "These days I cycle to work instead of taking the bus", True),
    # it ends something else and states what goes on: the older one states what goes on (issue 45 #1)
    ("Cycling to work is how I commute now", "I stopped taking the bus to work; I cycle to work now", False),
    ("I cycle to work every morning now", "These days I cycle to work instead of taking the bus", False),
])
def test_cessation_ends_what_the_other_states_not_what_goes_on(older: str, newer: str, expected: bool) -> None:
    assert pair_rules.cessation(older, newer) is expected


@pytest.mark.parametrize(("other", "old", "new", "expected"), [
    # a restatement of the replaced statement goes with it
    ("Bus to work every day, that is my commute", "I take the bus to work every day",
     "I stopped taking the bus to work; I cycle there now", True),
    # another value is updated through its frame, which takes every older statement of it; a restatement
    # of an old answer ("Who won? Spain.") may answer another question: not taken here (SituatedQA)
    ("Our team standup happens at 9:30 each weekday morning", "The standup is at 9:30 every weekday",
     "The standup is at 10:30 every weekday", False),
    # a statement of what goes on, or of something else, stays
    ("I cycle to work every day", "I take the bus to work every day",
     "I stopped taking the bus to work; I cycle there now", False),
    ("The standup is at 10:30 every weekday", "The standup is at 9:30 every weekday",
     "The standup is at 10:30 every weekday", False),
    ("Caroline takes the bus to work every day", "I take the bus to work every day",
     "I stopped taking the bus to work; I cycle there now", False),
])
def test_restates_what_a_cessation_ended(other: str, old: str, new: str, expected: bool) -> None:
    assert pair_rules.restates(other, old, new) is expected
