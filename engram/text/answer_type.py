"""What kind of value a question asks for, and whether a memory's text states one.

"How many sources are in my library?" asks for a count; "What time is the call?" for a time of day. A
memory that states no value of that kind ("The user is finalizing the first draft of the essay by May 15")
may be about the right thing, but it cannot answer it. This is the expected answer type of classic
question answering, read from the question's interrogative alone: no vocabulary of any one domain.
A when-question is not one of them: every memory has its own date.
"""

from __future__ import annotations

import re
from functools import lru_cache

from engram.text.counts import counts
from engram.text.tokens import KEPT_TEXT_MAX

COUNT = "count"
CLOCK = "clock"

_LEAD = r"^\W*(?:(?:and|so|then|also|ok|okay)\W+)?"
# "how long" and "how old" are left out: a duration or an age is as often read from a date ("started in March
# 2021", "born in 2015") as stated
_ASKS_COUNT = re.compile(
    _LEAD + r"(?:how\s+(?:many|much|often|far)\b|what\s+(?:percentage|percent|proportion|number|amount|total)\b)",
    re.I)
_ASKS_CLOCK = re.compile(_LEAD + r"(?:at\s+)?what\s+time\b", re.I)
# A duration between two events ("how many days passed between ...", "how long did it take ...") is
# computed from the events' dates, and a count of mentions ("how many different ...", "... across my
# sessions") from many memories: no one memory states either, so neither asks for a count.
_TIME_UNITS = r"(?:seconds?|minutes?|hours?|days?|nights?|weeks?|weekends?|months?|years?|decades?)"
_BETWEEN_EVENTS = re.compile(
    r"^\W*(?:how\s+long|how\s+many\s+(?:more\s+)?" + _TIME_UNITS + r")\b.*\b(?:between|after|before|since|until|till"
    r"|passed|elapsed|take|took|ago|left)\b", re.I)
_MENTIONS = re.compile(r"^\W*how\s+many\s+(?:different|distinct|separate|kinds?|types?"
                       r"|times(?!\s+(?:a|an|per|each|every)\b))\b|\bacross\b", re.I)
_CLOCK_TIME = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:a\.?m\b\.?|p\.?m\b\.?)|\b\d{1,2}:\d{2}\b|\b(?:noon|midnight)\b", re.I)
# "one" and "half" are left out: "one of my friends", "half an hour late" count nothing asked
_NUMBER_WORDS = re.compile(
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty"
    r"|hundred|thousand|million|billion|dozens?|twice|thrice)\b", re.I)
# an amount of money or a range is a value too ("$1,200", "7-8 hours"), though no count update reads it
_AMOUNT_OR_RANGE = re.compile(r"[$\u20ac\u00a3\u00a5]\s?\d|\d\s*(?:-|\u2013|to)\s*\d")


@lru_cache(maxsize=4096)
def expected(question: str) -> str | None:
    """COUNT for a question asking how many / how much / how often / what percentage ... of one thing, CLOCK
    for one asking what time; None for any other (a duration between events, a count of mentions)."""
    if _ASKS_CLOCK.search(question):
        return CLOCK
    if _ASKS_COUNT.search(question) and not _BETWEEN_EVENTS.search(question) and not _MENTIONS.search(question):
        return COUNT
    return None


def states(text: str, kind: str) -> bool:
    """Whether `text` states a value of `kind`: a time of day, or a count (engram.text.counts: a number that
    is no date, time of day, year or version; or a number in words)."""
    return _states(text, kind) if len(text) <= KEPT_TEXT_MAX else _read_states(text, kind)


@lru_cache(maxsize=1 << 14)  # short texts only: a cache of pages would hold megabytes
def _states(text: str, kind: str) -> bool:
    return _read_states(text, kind)


def _read_states(text: str, kind: str) -> bool:
    if kind == CLOCK:
        return _CLOCK_TIME.search(text) is not None
    return bool(counts(text)) or _NUMBER_WORDS.search(text) is not None or _AMOUNT_OR_RANGE.search(text) is not None
