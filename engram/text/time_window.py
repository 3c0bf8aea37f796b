"""The time a question asks about, as windows: "on 9 November, 2022" -> that day, "in May 2023" -> that
month, "last week" -> the week before the query time, "in 2022" -> that year.

Spans are found by engram.text.dates (dateparser) and by the calendar patterns it may miss inside a
longer phrase ("the week before August 3, 2023"); each span's granularity (day, week, month, year)
is dateparser's own `period`, so a window is as wide as what was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from engram.text.dates import CALENDAR, time_mentions

_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_YEAR_AFTER = re.compile(r",?\s*(?:19|20)\d\d\b")  # "August 3" + ", 2023"
# a day named by a date is widened by this much each side: a conversation's date and the clock of
# the store can differ by a time zone, and "on 9 November" is often said of the evening before
DAY_SLACK = timedelta(days=1)
MAX_WINDOWS = 3


@dataclass(frozen=True)
class TimeWindow:
    """A span of time a question names: [start, end), naive UTC, and the words that named it."""

    start: datetime
    end: datetime
    span: str

    def contains(self, moment: datetime | None) -> bool:
        """Whether the moment falls inside the window."""
        return moment is not None and self.start <= moment < self.end


@lru_cache(maxsize=8)  # keyed by the query time: a few live at once, not one per query ever made
def _parser(base: datetime) -> Any:
    from dateparser.date import DateDataParser

    return DateDataParser(languages=["en"], settings={
        "RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False})


def _window(span: str, moment: datetime, period: str) -> TimeWindow:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "year":
        start = day.replace(month=1, day=1)
        return TimeWindow(start, start.replace(year=start.year + 1), span)
    if period == "month":
        start = day.replace(day=1)
        end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        return TimeWindow(start, end, span)
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return TimeWindow(start - DAY_SLACK, start + timedelta(days=7) + DAY_SLACK, span)
    return TimeWindow(day - DAY_SLACK, day + timedelta(days=1) + DAY_SLACK, span)


def _parsed(span: str, now: datetime) -> TimeWindow | None:
    data = _parser(now).get_date_data(span)
    if data is None or data.date_obj is None:
        return None
    return _window(span, data.date_obj, data.period or "day")


# A span's granularity does not depend on when it is read ("last week" is a week whenever it is said),
# while its moment does: time_mentions has already resolved the moment, so a query need not parse the
# span a second time (0.7 ms a time-naming query on average, up to 1.4); spans repeat across queries.
_PERIOD_BASE = datetime(2000, 1, 1)


@lru_cache(maxsize=4096)
def _period(span: str) -> str:
    data = _parser(_PERIOD_BASE).get_date_data(span)
    return (data.period if data is not None else None) or "day"


def query_windows(text: str, now: datetime) -> list[TimeWindow]:
    """The windows of time a question names, resolved against `now` (naive UTC); [] when it names none."""
    out: list[TimeWindow] = []
    taken: list[str] = []
    for mention in time_mentions(text, now):
        out.append(_window(mention.span, mention.moment, _period(mention.span)))
        taken.append(mention.span.lower())
    for match in CALENDAR.finditer(text):  # a date inside a phrase dateparser read as a whole and dropped
        year = _YEAR_AFTER.match(text, match.end())
        span = text[match.start():year.end() if year else match.end()]
        if not any(span.lower() in t for t in taken):
            window = _parsed(span, now)
            if window is not None:
                out.append(window)
                taken.append(span.lower())
    for match in _YEAR.finditer(text):  # a year on its own ("in 2022") names that year
        if not any(match.group(0) in t for t in taken):
            start = datetime(int(match.group(0)), 1, 1)
            out.append(TimeWindow(start, start.replace(year=start.year + 1), match.group(0)))
    return out[:MAX_WINDOWS]


def in_any(windows: list[TimeWindow], moment: datetime | None) -> bool:
    """Whether the moment falls inside one of the windows."""
    return any(w.contains(moment) for w in windows)
