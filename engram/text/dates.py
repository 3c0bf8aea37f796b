"""Relative time as data: "yesterday", "last week", "two years ago" resolved against when it was said.

Resolution is dateparser's (a maintained library that takes a base date); this module only decides
which of the spans dateparser finds are time expressions at all. dateparser also reads "may",
"march" or "second" as dates and "7 years" (a duration) as a point in time, so a span is kept only
when it carries a time anchor: a relative word (ago, yesterday, last, next, ...), a weekday, or a
calendar date with a number in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

_STRONG_WORDS = r"ago|yesterday|today|tonight|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend"
_WEAK_BEFORE = r"last|next|this|past|previous|coming"  # a time when a unit of time follows ("last week")
_WEAK_AFTER = r"earlier|later"  # a time after one ("two days later")
_ANCHOR = re.compile(rf"\b({_STRONG_WORDS}|{_WEAK_BEFORE}|{_WEAK_AFTER})\b", re.I)
_MONTH = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
CALENDAR = re.compile(rf"\b(\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTH})|(?:{_MONTH})\s+\d{{1,2}}(?:st|nd|rd|th)?"
                       rf"|(?:{_MONTH})\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}})\b", re.I)
# "last", "this", "next", ... name a time only beside a unit of time ("last week", "this morning", "next
# fri", "two days later"); a sentence whose only anchors are these words used otherwise ("at last", "this
# is it", "see you later") is not handed to dateparser, which finds nothing there (~0.9 ms a sentence; a
# fifth of conversational turns have such a word).
_UNIT = (r"(?:second|minute|hour|day|night|morning|afternoon|evening|week|weekend|fortnight|month|year|decade"
         r"|century|season|spring|summer|fall|autumn|winter|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun"
         rf"|(?:mon|tues|wednes|thurs|fri|satur|sun)day|{_MONTH})s?")
_STRONG_ANCHOR = re.compile(rf"\b(?:{_STRONG_WORDS})\b", re.IGNORECASE)
_WEAK_BESIDE_UNIT = re.compile(rf"\b(?:{_WEAK_BEFORE})\W+(?:\w+\W+){{0,2}}?{_UNIT}\b"
                               rf"|\b{_UNIT}\W+(?:\w+\W+){{0,2}}?(?:{_WEAK_AFTER})\b", re.IGNORECASE)
# dateparser's search finds no time followed by a comma and a clause ("Last week, I went ..." gives
# nothing where "Last week I went ..." gives "Last week"); it splits clauses at a semicolon, so a comma
# that does not start a number (not the one of "May 7, 2023") is handed to it as one. Same length: each
# span it finds is at the same place in the sentence.
_CLAUSE_COMMA = re.compile(r",(?!\s*\d)")
_EDGE_WORDS = re.compile(r"^(?:and|the|on|in|at|of|for|to)\s+|\s+(?:and|the|on|in|at|of|for|to)$", re.I)


@dataclass(frozen=True)
class TimeMention:
    """A time expression of a sentence: the span as written and the moment it names."""

    span: str
    moment: datetime
    relative: bool  # resolved against when it was said ("yesterday"), not written as a date


@cache
def _search() -> Any:
    from dateparser.search import search_dates  # imported on first use: it takes ~0.6 s

    return search_dates


def parser_loaded() -> bool:
    """Whether this process has loaded dateparser (its first use costs ~0.5 s: import, locale data)."""
    return _search.cache_info().currsize > 0


def is_time_expression(span: str) -> bool:
    """Whether a text has a time anchor (a relative word, a weekday, a calendar date): the spans
    time_mentions keeps, and the sentences it runs dateparser on."""
    if _ANCHOR.search(span) or CALENDAR.search(span):
        return True
    return False  # "7 years" is how long, not when; "may" alone is a verb


def _may_name_a_time(sentence: str) -> bool:
    """Whether dateparser could find a span time_mentions keeps: a strong anchor, a calendar date, or a
    weak anchor beside a unit of time."""
    return bool(_STRONG_ANCHOR.search(sentence) or CALENDAR.search(sentence) or _WEAK_BESIDE_UNIT.search(sentence))


def time_mentions(sentence: str, said_at: datetime) -> list[TimeMention]:
    """Time expressions of a sentence, resolved against `said_at` (a naive UTC datetime)."""
    if not _may_name_a_time(sentence):
        return []  # no span of it could be kept: dateparser (milliseconds a sentence) need not run
    settings = {"RELATIVE_BASE": said_at, "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}
    searched = _CLAUSE_COMMA.sub(";", sentence)
    try:
        found = _search()(searched, languages=["en"], settings=settings) or []
    except (ValueError, OverflowError, TypeError):  # dateparser raises on odd inputs; no date then
        return []
    out = []
    for span, moment in found:
        at = searched.find(span)
        span = sentence[at:at + len(span)] if at >= 0 else span
        span = _EDGE_WORDS.sub("", span.strip(" ,.;:!?")).strip()
        if span and is_time_expression(span):
            calendar = CALENDAR.search(span)
            if calendar is not None and not _YEAR.search(span) and calendar.group() != span:
                moment = _calendar_moment(calendar.group(), moment, settings)
            out.append(TimeMention(span, moment, relative=calendar is None))
    return out


_YEAR = re.compile(r"\b\d{4}\b|'\d{2}\b")


def _calendar_moment(date: str, moment: datetime, settings: dict[str, Any]) -> datetime:
    """The moment of the calendar date alone: dateparser reads a number before it into the date ("sprint 1
    on March 29" gave 1 March 1929)."""
    try:
        found = _search()(date, languages=["en"], settings=settings) or []
    except (ValueError, OverflowError, TypeError):
        return moment
    return found[0][1] if found else moment


def _nearest_year(moment: datetime, said_at: datetime) -> datetime:
    """A date written without its year ("April 15") in the year that puts it nearest to when it was said:
    a deadline next month is this year's, a trip last December last year's (dateparser's preference for
    the past put a deadline a month ahead eleven months back)."""
    options = []
    for year in (said_at.year - 1, said_at.year, said_at.year + 1):
        try:
            options.append(moment.replace(year=year))
        except ValueError:  # 29 February
            continue
    return min(options, key=lambda m: (abs(m - said_at), m)) if options else moment


def format_date(moment: datetime) -> str:
    """A date as people write it in English: 7 May 2023."""
    return f"{moment.day} {moment:%B %Y}"


# The unit a relative span counts in, coarsest first: "last year" names a year, not the day a year ago
# (dateparser returns a day for every span). Weeks and days keep the day dateparser gives.
_SPAN_UNITS = (
    ("decade", re.compile(r"\bdecades?\b", re.I)),
    ("year", re.compile(r"\byears?\b", re.I)),
    ("season", re.compile(r"\b(?:spring|summer|fall|autumn|winter)s?\b", re.I)),
    ("month", re.compile(rf"\b(?:months?|{_MONTH})\b", re.I)),
)


def span_precision(span: str) -> str:
    """What a relative time span names: a decade, year, season, month, or (anything finer) a day."""
    return next((unit for unit, words in _SPAN_UNITS if words.search(span)), "day")


def format_period(moment: datetime, precision: str, span: str = "") -> str:
    """The moment written to the precision its span has: "2025", "October 2026", "summer 2026", "the
    2020s", else a day (format_date)."""
    if precision == "decade":
        return f"the {moment.year // 10 * 10}s"
    if precision == "year":
        return f"{moment:%Y}"
    if precision == "season":
        season = next(w for w in ("spring", "summer", "autumn", "fall", "winter") if re.search(rf"\b{w}", span, re.I))
        return f"{season} {moment:%Y}"
    if precision == "month":
        return f"{moment:%B %Y}"
    return format_date(moment)


def with_absolute_dates(sentence: str, said_at: datetime, nearest: bool = False) -> tuple[str, datetime | None]:
    """The sentence with relative time made absolute, to the precision it has ("yesterday" -> "yesterday
    (7 May 2023)", "last year" -> "last year (2022)", "this month" -> "this month (May 2023)"), and the
    moment the sentence is about (its first time mention), if it names one. With `nearest`, a date written
    without its year is put in the year nearest to when it was said ("my deadline is April 15" said in
    March: this April), not always in the past (dateparser's preference, which a query about the past
    keeps). A statement's tense does not settle it: "I've accepted ... and have a call on April 21" reads
    as past, and people seldom leave out the year of a day more than half a year away."""
    mentions = time_mentions(sentence, said_at)
    if nearest:
        mentions = [TimeMention(m.span, _nearest_year(m.moment, said_at), m.relative)
                    if not m.relative and not _YEAR.search(m.span) else m for m in mentions]
    text = sentence
    for m in mentions:
        if m.relative:
            when = format_period(m.moment, span_precision(m.span), m.span)
            text = text.replace(m.span, f"{m.span} ({when})", 1)
    return text, (mentions[0].moment if mentions else None)
