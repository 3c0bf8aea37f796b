"""What a question asks for (a count, a time of day) and whether a memory states it (engram.text.answer_type)."""

from __future__ import annotations

import pytest

from engram.text.answer_type import CLOCK, COUNT, expected, states


@pytest.mark.parametrize("question, kind", [
    ("How many sources are in my Zotero library?", COUNT),
    ("how much does the subscription cost each month?", COUNT),
    ("How often does John work out with his family?", COUNT),
    ("How many times a week do I go running?", COUNT),
    ("What percentage of the tests pass?", COUNT),
    ("So how many turtles does Nate have?", COUNT),
    ("What time should I join the Zoom meeting?", CLOCK),
    ("At what time is the standup?", CLOCK),
    # a duration between events is computed from their dates; a count of mentions from many memories
    ("How many days passed between the launch and the review?", None),
    ("How long did it take me to improve my accuracy?", None),
    # a duration or an age is as often read from a date as stated
    ("How long have I been working at Northwind?", None),
    ("How old is my daughter?", None),
    ("How many weeks do I have between the sprint and the deadline?", None),
    ("How many different features did I mention?", None),
    ("How many times did I revise my cover letter?", None),
    ("How many roles am I applying for across my sessions?", None),
    ("When is my call with the creative director?", None),
    ("Where does Lena live?", None),
])
def test_the_kind_a_question_asks_for(question: str, kind: str | None) -> None:
    assert expected(question) == kind


@pytest.mark.parametrize("text, kind, says", [
    ("The user's final draft reached 4,700 words by May 13", COUNT, True),
    ("Melanie has three kids", COUNT, True),
    ("The laptop cost $1,200.", COUNT, True),
    ("The user sleeps 7-8 hours a night", COUNT, True),
    ("One of the user's friends lives in Porto", COUNT, False),
    ("The test coverage is 78%", COUNT, True),
    ("The user is finalizing the first draft of the essay by May 15, 2024", COUNT, False),
    ("The meeting is at 3 PM on March 22", COUNT, False),
    ("The user upgraded to Python 3.11 in 2024", COUNT, False),
    ("The call was moved to 4:30 PM", CLOCK, True),
    ("The user has a Zoom meeting with Professor Danielle on March 22", CLOCK, False),
])
def test_whether_a_text_states_a_value_of_that_kind(text: str, kind: str, says: bool) -> None:
    assert states(text, kind) is says
