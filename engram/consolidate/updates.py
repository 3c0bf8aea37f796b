"""Knowledge updates by frame: the same statement with another value is a newer version of it.

A statement's frame is its words with the values masked: names and numbers after its subject
("Who coaches the Lions? Dan Campbell." -> "who coaches the lions ?"; "Caroline lives in Porto" ->
"caroline lives in ?"). Two facts with one frame and different values state one attribute of one
subject with two values: the older is superseded by the newer (valid until the newer's valid_from).
Frames are compared exactly, so this needs no similarity threshold; statements whose values are
not names or numbers ("I drink coffee" / "I drink tea") are left to the similarity-based rules.
Only statements of a state are updated: a past event ("Ann went to Paris", then "Ann went to Rome")
is history that stays true, so a statement in the past tense takes no part, unless it answers a
question ("Who won the last final? Spain."): the question is the attribute, whatever its tense.
Preferences are many-valued ("Ann likes Paris", "Ann likes Rome"): they take no part either.

Frames ask the two statements to be worded alike. Two more rules find updates in statements worded
differently, among a night's similar pairs (confidence._count_supersessions): a count of the same thing
with another value ("my Zotero library has 45 sources" -> "I've added 52 sources to my Zotero library",
count_update), and a planned thing set to another date while both dates are still ahead ("a deadline of
April 1" -> "the new sprint deadline of April 5", date_update). Both read only numbers, dates and the nouns
beside them, and ask for other content words in common; neither reads goals, nor another subject's words.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from engram.consolidate.pair_rules import different_subjects
from engram.text.atomic import tense
from engram.text.counts import BARE, counts
from engram.text.dates import CALENDAR
from engram.text.sentences import claim_type, frame_of
from engram.text.tokens import STATEMENT_STOPWORDS, suffix_stem, word_tuple


@dataclass(frozen=True)
class Update:
    """The older fact `old_id` is superseded by `new_id` from `valid_to` on."""

    old_id: str
    new_id: str
    valid_to: datetime


def _answered(text: str) -> bool:
    """Whether a statement is a question with its answer ("How many seasons has Lost? 6."), as update_frame
    reads it."""
    return "?" in text.rstrip("?")


def update_frame(text: str) -> tuple[str, frozenset[str]] | None:
    """(frame, values) of a statement that can be updated: a state with a value, or an answered question."""
    frame, value = frame_of(text)
    if frame is None or not value:
        return None
    if _answered(text) or (tense(text) != "past" and claim_type(text) != "preference"):
        return frame, value
    return None


def frame_updates(
    ids: list[str], texts: list[str], valid_from: list[datetime], changed: set[str]
) -> list[Update]:
    """Supersessions among current facts, for frames that a `changed` (new) fact takes part in.

    Within a frame, facts are ordered by valid_from; each value is superseded by the next different
    value after it. Facts stated at the same moment with different values are a contradiction, not
    an update: they are left alone here.
    """
    by_frame: dict[str, list[int]] = defaultdict(list)
    values: dict[int, frozenset[str]] = {}
    for i, text in enumerate(texts):
        framed = update_frame(text)
        if framed is not None:
            by_frame[framed[0]].append(i)
            values[i] = framed[1]
    out: list[Update] = []
    for members in by_frame.values():
        if len(members) < 2 or not any(ids[i] in changed for i in members):
            continue
        members.sort(key=lambda i: (valid_from[i], ids[i]))
        for pos, i in enumerate(members):
            newer = next((j for j in members[pos + 1:]
                          if values[j] != values[i] and valid_from[j] > valid_from[i]), None)
            if newer is not None:
                out.append(Update(ids[i], ids[newer], valid_from[newer]))
    return out


def restatement_runs(said: list[tuple[str, str, datetime]]) -> list[int]:
    """The run of each (statement key, frame key, time) in `said`: within a frame, in time order, a
    statement said again after another value of its frame starts a new run ("Ann lives in Lisbon",
    "Ann lives in Porto", "Ann lives in Lisbon" again: Lisbon's second run is the current value, not
    more evidence for the first). A statement with no frame ('') keeps run 0."""
    runs = [0] * len(said)
    by_frame: dict[str, list[int]] = defaultdict(list)
    for i, (_, frame, _) in enumerate(said):
        if frame:
            by_frame[frame].append(i)
    for members in by_frame.values():
        members.sort(key=lambda i: (said[i][2], i))
        run_of: dict[str, int] = {}
        last_key: str | None = None
        for i in members:
            key = said[i][0]
            if key != last_key and key in run_of:
                run_of[key] += 1
            run_of.setdefault(key, 0)
            runs[i] = run_of[key]
            last_key = key
    return runs


# A count of the same thing with another value, stated later of the same subject, is its newer value ("45
# sources" -> "52 sources"), whatever the words around it, as long as they speak of the same thing
# (COUNT_MIN_SHARED); engram.text.counts reads the counts.
COUNT_MIN_COSINE = 0.3  # pairs of a new and an active fact are looked at from this cosine on (a value can sit in a long statement about something else)
COUNT_MIN_SHARED = 2  # content words, besides the counted thing, the two statements share
# a bare percentage names what it measures only through the words around it ("test coverage of the API
# module 65%" / "test coverage of the core modules 85%"): it asks for more of them in common
PERCENT_MIN_SHARED = 4

BARE_WINDOW = 8  # words before a bare number (counts.BARE) among which the noun it counts is looked for


def _bare_nouns(text: str, value: str) -> set[str]:
    """The content stems of the BARE_WINDOW words before a bare number `value` of `text`."""
    lowered = text.lower().replace(",", "")
    at = lowered.rfind(value)
    before = word_tuple(lowered[:at])[-BARE_WINDOW:] if at >= 0 else ()
    return {suffix_stem(w) for w in before if w not in STATEMENT_STOPWORDS and not w[0].isdigit()}


def _with_bare(text: str, mine: dict[tuple[str, ...], str], other: dict[tuple[str, ...], str]
               ) -> dict[tuple[str, ...], str]:
    """`mine` with each bare number keyed by the unit of `other` whose head noun is just before it."""
    out = {u: v for u, v in mine.items() if u[0] != BARE}
    for u, v in mine.items():
        if u[0] == BARE:
            near = _bare_nouns(text, v)
            for unit in other:
                if unit[0] not in (BARE, "percent") and unit[-1] in near and unit not in out:
                    out[unit] = v
    return out


def count_update(older: str, newer: str) -> bool:
    """Whether `newer` states a new value of a count `older` states: the same counted thing with another
    value, and at least COUNT_MIN_SHARED other content words in common. Percentages count only when
    neither statement has another count, with PERCENT_MIN_SHARED words in common."""
    a, b = counts(older), counts(newer)
    a, b = _with_bare(older, a, b), _with_bare(newer, b, a)
    changed = [u for u in a.keys() & b.keys() if float(a[u]) != float(b[u])]
    if any(u == ("percent",) for u in changed) and len(a) + len(b) > 2:
        changed = [u for u in changed if u != ("percent",)]
    if not changed:
        return False
    counted = {w for u in changed for w in u}
    shared = (_content_stems(older) & _content_stems(newer)) - counted
    return len(shared) >= (PERCENT_MIN_SHARED if changed == [("percent",)] else COUNT_MIN_SHARED)


def _content_stems(text: str) -> set[str]:
    return {suffix_stem(w) for w in word_tuple(text)
            if w not in STATEMENT_STOPWORDS and not w[0].isdigit() and w not in _GENERIC}


# words every statement of an agent's user carries ("The user is trying to ..."): no evidence of one topic
_GENERIC = {"user", "user's", "trying", "want", "wants", "need", "needs", "help", "sure", "make", "understand"}


def count_updates(pairs: list[tuple[str, str]], texts: dict[str, str], valid_from: dict[str, datetime]
                  ) -> list[Update]:
    """Supersessions among similar pairs of fact ids: the earlier fact of a pair is superseded by the later
    one when the later states a new value of its count (count_update), of the same subject, neither a goal.
    An older fact with several newer values is superseded by the earliest of them; facts stated at the
    same moment are left alone (two values at once are a contradiction, not an update)."""
    until: dict[str, tuple[datetime, str]] = {}
    for a, b in pairs:
        if a == b or valid_from.get(a) is None or valid_from.get(b) is None or valid_from[a] == valid_from[b]:
            continue
        older, newer = (a, b) if valid_from[a] < valid_from[b] else (b, a)
        to, tn = texts[older], texts[newer]
        if _answered(to) or _answered(tn):
            continue  # the question is the attribute: frame_updates compares answers of one question
        if "goal" in (claim_type(to), claim_type(tn)) or different_subjects(to, tn) or not count_update(to, tn):
            continue
        if older not in until or (valid_from[newer], newer) < until[older]:
            until[older] = (valid_from[newer], newer)
    return [Update(old, new, at) for old, (at, new) in sorted(until.items())]


# A date a thing is set for: a calendar date (and a time of day after it) and the word it is the date of,
# the noun right after it ("my April 20 deadline") or else the nearest content word before it ("a deadline
# of April 1", "the call with the creative director on April 21 at 3 PM"). A later statement setting the
# same thing to another date, of the same subject, while both dates are still ahead of when they were said,
# moves it ("the new April 25 deadline", "moving the call with the creative director to April 22 at 11 AM").
DATE_MIN_SHARED = 1
_TIME_AFTER = re.compile(r"^,?\s*(?:\d{4}\s*)?(?:,?\s*at\s+)?(\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.))?", re.I)


def dated_things(text: str) -> dict[str, str]:
    """{the word a date is the date of (stemmed): the date as written, with its time of day, lowercased}."""
    out: dict[str, str] = {}
    lowered = text.lower()
    for m in CALENDAR.finditer(lowered):
        tail = _TIME_AFTER.match(lowered[m.end():])
        when = " ".join(x for x in (m.group(), tail.group(1) if tail and tail.group(1) else "") if x)
        after = word_tuple(lowered[m.end() + (tail.end() if tail else 0):][:40])
        before = [w for w in word_tuple(lowered[:m.start()]) if w not in STATEMENT_STOPWORDS and not w[0].isdigit()]
        if after and after[0] not in STATEMENT_STOPWORDS and not after[0][0].isdigit():
            thing = after[0]
        elif before:
            thing = before[-1]
        else:
            continue
        out[suffix_stem(thing)] = re.sub(r"\s+", " ", when.replace(",", " ")).strip()
    return out


def date_update(older: str, newer: str) -> bool:
    """Whether `newer` sets a thing `older` dates to another date: the same word dated, another date, and at
    least DATE_MIN_SHARED other content words in common (the dated word itself already says what is set)."""
    a, b = dated_things(older), dated_things(newer)
    changed = [t for t in a.keys() & b.keys() if a[t] != b[t]]
    if not changed:
        return False
    shared = (_content_stems(older) & _content_stems(newer)) - set(changed) - {
        suffix_stem(w) for v in (*a.values(), *b.values()) for w in word_tuple(v)}
    return len(shared) >= DATE_MIN_SHARED


def date_updates(pairs: list[tuple[str, str]], texts: dict[str, str], said: dict[str, datetime],
                 valid_from: dict[str, datetime]) -> list[Update]:
    """Supersessions among similar pairs of fact ids: of two statements said at different times that date one
    thing for later than they were said (valid_from, the date the text names, on or after the day it was
    said), the later-said one moves it (date_update): the earlier is superseded from when the later was said."""
    until: dict[str, tuple[datetime, str]] = {}
    for a, b in pairs:
        if a == b or any(x.get(y) is None for x in (said, valid_from) for y in (a, b)) or said[a] == said[b]:
            continue
        if valid_from[a].date() < said[a].date() or valid_from[b].date() < said[b].date():
            continue  # a date already past when said is history, not a plan that can move
        older, newer = (a, b) if said[a] < said[b] else (b, a)
        to, tn = texts[older], texts[newer]
        if _answered(to) or _answered(tn) or different_subjects(to, tn) or not date_update(to, tn):
            continue
        if older not in until or (said[newer], newer) < until[older]:
            until[older] = (said[newer], newer)
    return [Update(old, new, at) for old, (at, new) in sorted(until.items())]
