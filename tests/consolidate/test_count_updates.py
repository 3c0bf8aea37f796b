"""Counted updates: a later count of the same thing, of the same subject, supersedes the earlier one."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.consolidate.updates import Update, count_update, count_updates
from engram.text.counts import counts

T1, T2, T3 = datetime(2024, 3, 1), datetime(2024, 4, 1), datetime(2024, 5, 1)


@pytest.mark.parametrize(("text", "expected"), [
    ("My Zotero library has 45 sources, tagged by theme", {("sourc",): "45"}),
    ("I completed 10 classification problems, scoring 8/10", {("classification", "problem"): "10"}),
    ("the daily quota of 1,200 calls per day", {("call",): "1200"}),
    ("the gallery with 8 cards using Bootstrap 5.3.0", {("card",): "8"}),
    ("accuracy improved from 70% to 90%", {("percent",): "90"}),  # the last value stated is the current one
    ("the meeting on April 20, 2024 at 3 PM", {}),  # dates, years and times are no counts
])
def test_counts_name_the_counted_thing(text: str, expected: dict) -> None:
    assert counts(text) == expected


def test_a_new_value_of_the_same_count_is_an_update() -> None:
    assert count_update("The user's Zotero library has 45 sources, tagged by theme and date",
                        "The user has added 52 sources to the user's Zotero library")
    assert count_update("The user secured 3 interviews for executive producer roles",
                        "The user secured 5 interviews for executive producer roles since then")


def test_other_things_counted_or_too_little_in_common_are_not() -> None:
    # another counted thing
    assert not count_update("The user completed 12 area calculation problems",
                            "The user completed 15 classification problems")
    # the same unit, nothing else in common
    assert not count_update("Ann bought 3 books", "Ann lent 5 books to Bob")
    # the same value
    assert not count_update("The library has 45 sources on film", "The library holds 45 sources on film")
    # a bare percentage asks for four shared words: "test coverage" of another module is another measure
    assert not count_update("The user reached 78% test coverage for the API integration module",
                            "The user has achieved 85% test coverage on core modules")
    assert count_update("The user reached 65% test coverage for the API integration module",
                        "The user's test coverage for the API integration module improved to 78%")


def test_the_earlier_fact_is_superseded_by_the_earliest_later_value() -> None:
    texts = {"a": "The user's Zotero library has 45 sources on film theory",
             "b": "The user's Zotero library now has 52 sources on film theory",
             "c": "The user's Zotero library has grown to 60 sources on film theory"}
    when = {"a": T1, "b": T2, "c": T3}
    got = count_updates([("b", "a"), ("c", "a"), ("c", "b")], texts, when)
    assert got == [Update("a", "b", T2), Update("b", "c", T3)]


def test_goals_other_subjects_and_one_moment_are_left_alone() -> None:
    when = {"a": T1, "b": T2}
    goal = {"a": "The user wants to collect 60 sources in the Zotero library",
            "b": "The user has 52 sources in the Zotero library"}
    assert count_updates([("a", "b")], goal, when) == []
    people = {"a": "Caroline has 3 dogs at the farm house", "b": "Melanie has 2 dogs at the farm house"}
    assert count_updates([("a", "b")], people, when) == []
    same_time = {"a": "The user's Zotero library has 45 sources", "b": "The user's Zotero library has 52 sources"}
    assert count_updates([("a", "b")], same_time, {"a": T1, "b": T1}) == []


def test_a_planned_date_moved_later_supersedes_the_first_one() -> None:
    from engram.consolidate.updates import date_update, date_updates, dated_things

    assert dated_things("my April 20 deadline for the draft") == {"deadline": "april 20"}
    assert dated_things("a Zoom call with the creative director on April 21 at 3 PM") == {
        "director": "april 21 3 pm"}
    assert date_update("The user has a Zoom call with the creative director on April 21 at 3 PM",
                       "The user is moving the Zoom call with the creative director to April 22 at 11 AM")
    assert not date_update("The user has a meeting on April 5 with Greg", "The user has a meeting on April 9 with Laura")
    texts = {"a": "The user has a deadline of April 1, 2024, for the first sprint",
             "b": "The user set the new sprint deadline to April 5, 2024"}
    said = {"a": datetime(2024, 3, 15, 9), "b": datetime(2024, 3, 20, 9)}
    ahead = {"a": datetime(2024, 4, 1), "b": datetime(2024, 4, 5)}
    assert date_updates([("a", "b")], texts, said, ahead) == [Update("a", "b", said["b"])]
    # a date already past when it was said is history: a trip on one day and a trip on another both happened
    past = {"a": datetime(2024, 3, 1), "b": datetime(2024, 3, 10)}
    assert date_updates([("a", "b")], texts, said, past) == []


def test_answers_to_two_questions_are_not_counts_of_one_thing() -> None:
    # SituatedQA: each answered question is its own attribute (frame_updates), whatever numbers they share
    texts = {"a": "How many episodes are in season 1 of Lost? 25.", "b": "How many episodes are in season 2 of Lost? 24."}
    assert count_updates([("a", "b")], texts, {"a": T1, "b": T2}) == []
