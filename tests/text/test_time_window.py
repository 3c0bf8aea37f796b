"""query_windows: the time a question names becomes a window as wide as what was written."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.text.time_window import in_any, query_windows

NOW = datetime(2026, 11, 25, 12, 0)


def spans(text: str) -> list[tuple[str, str]]:
    return [(f"{w.start:%Y-%m-%d}", f"{w.end:%Y-%m-%d}") for w in query_windows(text, NOW)]


@pytest.mark.parametrize(("question", "window"), [
    ("What dish did Nate make on 9 November, 2022?", ("2022-11-08", "2022-11-11")),  # a day, one day of slack
    ("What did John host in May 2023?", ("2023-05-01", "2023-06-01")),                # a month
    ("What did she do in 2022?", ("2022-01-01", "2023-01-01")),                       # a year on its own
    ("What did he do the week before August 3, 2023?", ("2023-08-02", "2023-08-05")),  # a date inside a phrase
    ("What did I eat yesterday?", ("2026-11-23", "2026-11-26")),                       # relative to the query time
    ("What did we talk about last month?", ("2026-10-01", "2026-11-01")),
    ("Plans for next month?", ("2026-12-01", "2027-01-01")),
    ("Did we meet on 2023-05-07?", ("2023-05-06", "2023-05-09")),
])
def test_named_times_become_windows(question, window):
    assert spans(question) == [window]


@pytest.mark.parametrize("question", [
    "When did Melanie paint a sunrise?", "What may happen next?", "How many years did Nate keep turtles?",
    "what does the user drink in the morning?",
])
def test_questions_without_a_time_have_no_window(question):
    assert query_windows(question, NOW) == []


def test_last_week_is_the_week_before_the_query_time():
    (week,) = query_windows("what happened last week", NOW)
    assert week.start <= datetime(2026, 11, 18) < week.end <= NOW
    assert in_any([week], datetime(2026, 11, 17, 9)) and not in_any([week], datetime(2026, 11, 1))
    assert not in_any([week], None)


def test_a_yearless_date_is_read_alone_and_dated_in_the_nearest_year() -> None:
    from engram.text.dates import time_mentions, with_absolute_dates

    said = datetime(2024, 4, 5)
    # dateparser read "1 on March 29" as 1 March 1929
    assert [m.moment for m in time_mentions("I completed sprint 1 on March 29 with auth", said)] == [
        datetime(2024, 3, 29)]
    # a deadline ten days ahead is this year's, a trip in December last year's; the query side keeps the past
    assert with_absolute_dates("My deadline is April 15", said, nearest=True)[1] == datetime(2024, 4, 15)
    assert with_absolute_dates("We went skiing on December 20", said, nearest=True)[1] == datetime(2023, 12, 20)
    assert with_absolute_dates("My deadline is April 15", said)[1] == datetime(2023, 4, 15)
    assert with_absolute_dates("The trip is on May 7, 2023", said, nearest=True)[1] == datetime(2023, 5, 7)
