"""'Never' against a person's message: a clause of it stating what the fact says never happened."""

from __future__ import annotations

import numpy as np

from engram.consolidate.never import denied_by_message, never_episode_links, stated_clauses


def test_stated_clauses_leave_out_negations_code_and_the_never_itself() -> None:
    message = ("I've never attempted any triangle problems before, but I recently completed 15 triangle problems. "
               "I don't like proofs.\n\n```python\nprint('hi')\n```\n")
    assert stated_clauses(message) == ("I recently completed 15 triangle problems.",)


def test_a_message_stating_the_predicate_denies_the_never() -> None:
    never = "The user has never actually obtained an API key for this project"
    asked = ("Here's my attempt:\n\n```js\nlet n = 0;\n```\n\nHow can I handle the 1000 calls/day rate limit for my "
             "OpenWeather API key obtained on March 10, 2024?")
    assert denied_by_message(never, asked)
    assert not denied_by_message(never, "I didn't get an API key yet, can you help?")
    assert not denied_by_message(never, "Caroline obtained an API key for her project.")  # another subject


def test_links_are_found_by_shared_words_whatever_the_cosine() -> None:
    v = np.array([1.0, 0.0], np.float32)
    w = np.array([0.0, 1.0], np.float32)  # cosine 0 with v: a long message's vector reads only its start
    facts = [("f1", "The user has never missed any scheduled writing sessions", v),
             ("f2", "The user likes writing sessions in the morning", v)]
    episodes = [("e1", "I've got a rescheduled writing session on April 7 after missing the April 5 one.", w),
                ("e2", "The weather is nice today.", v)]
    assert never_episode_links(facts, episodes) == [("f1", "e1", 0.0)]


def test_only_a_never_of_the_past_is_compared_with_messages() -> None:
    from engram.consolidate.never import never_happened

    assert never_happened("The user has never actually obtained an API key")
    assert never_happened("Nope, never been on a sports team.")
    assert not never_happened("Melanie will never forget the day")  # the future
    assert not never_happened("That sign reminds Jon to never give up")  # a rule
    assert not never_happened("John would never felt so much love")  # a modal


def test_another_speakers_message_is_not_compared() -> None:
    v = np.array([1.0, 0.0], np.float32)
    facts = [("f1", "Maria has never been on a sports team", v)]
    episodes = [("e1", "We were on a sports team for four years in high school.", v)]
    assert never_episode_links(facts, episodes, {"f1": {"Maria"}}, {"e1": "John"}) == []
    assert never_episode_links(facts, episodes, {"f1": {"Maria"}}, {"e1": "Maria"}) == [("f1", "e1", 1.0)]
