"""Counts a statement states: a number and the thing it counts ("45 sources", "4,500 words", "78%").

A count is a number (not part of a date, a time, a version or a ratio) and the noun phrase it counts, up to
COUNT_UNIT_WORDS words up to the first function word ("12 conditional probability problems"). The counted
thing is the noun phrase's words, stemmed. engram.consolidate.updates compares two statements' counts (a
newer value of the same count); search asks whether a memory states a count at all
(engram.text.answer_type).
"""

from __future__ import annotations

import re

from engram.text.sentences import MONTHS
from engram.text.tokens import STATEMENT_STOPWORDS, suffix_stem, word_tuple

COUNT_UNIT_WORDS = 3
_COUNT = re.compile(r"(?<![\w.,/:$-])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.,/:]\d)(\s*%)?")
_PUNCTUATION = re.compile(r"[,;:.!?()/\[\]\"]")
_UNIT_ENDS = {"per", "each", "every", "a", "an", "the"}  # "1,200 calls per day" counts calls
_NOT_A_COUNT_AFTER = {"am", "pm", "a.m", "p.m", "st", "nd", "rd", "th", "o'clock"}
BARE = "#"  # the key of a number with no noun after it


def counts(text: str) -> dict[tuple[str, ...], str]:
    """The counted things of a statement and the value of each (the last one stated: "from 70% to 90%"
    counts 90%). Numbers in dates ("April 20", "2024"), times ("3 PM"), versions and ratios are no counts."""
    out: dict[tuple[str, ...], str] = {}
    lowered = text.lower()
    for m in _COUNT.finditer(lowered):
        value = m.group(1).replace(",", "")
        before = lowered[:m.start()].split()
        if (before and before[-1].strip(",.") in MONTHS) or (len(value) == 4 and value[:2] in ("19", "20")):
            continue
        if m.group(2):
            out[("percent",)] = value
            continue
        unit: list[str] = []
        for w in word_tuple(_PUNCTUATION.split(lowered[m.end():m.end() + 80], maxsplit=1)[0]):
            if (w in STATEMENT_STOPWORDS or w in _UNIT_ENDS or w[0].isdigit() or len(unit) == COUNT_UNIT_WORDS
                    or (unit and w.endswith(("ing", "ed")))):  # "8 cards using ...": a verb ends the phrase
                break
            unit.append(w)
        if unit and (unit[0] in _NOT_A_COUNT_AFTER or unit[0] in MONTHS):
            continue
        if not unit:
            # a number after its noun ("commits merged ... has now reached 165"): a count of one of the
            # nouns just before it, which a count of that noun elsewhere names (bare_counts)
            if m.end() == len(lowered.rstrip(" .!?")) or _PUNCTUATION.match(lowered[m.end():m.end() + 1] or "."):
                out[(BARE, value)] = value
            continue
        out[tuple(suffix_stem(w) for w in unit)] = value
    return out
