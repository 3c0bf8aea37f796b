"""The order of a search's results for a question asking a quantity: the memories that can answer it first,
the latest value of a count first.

"How many words does my draft have?": a memory stating no count ("The user is finalizing the draft by May
15") may be about the draft, but it cannot answer, so it ranks ANSWERLESS_WEIGHT lower; of two memories
counting the same thing ("4,500 words to submit", later "the final draft reached 4,700 words"), the later
is the current value and takes the earlier one's place when it ranked below it. The set of results does not
change, only their order (engram.text.answer_type, engram.text.counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engram.text import answer_type
from engram.text.counts import BARE, counts

ANSWERLESS_WEIGHT = 0.5  # the score of a memory that states no value of the kind the question asks for


def weigh(hits: Sequence[Any], query: str) -> None:
    """Lower the score of each hit whose own text states no value of the kind `query` asks for."""
    kind = answer_type.expected(query)
    if kind is None:
        return
    for h in hits:
        if not answer_type.states(h.text, kind):
            h.score = round(h.score * ANSWERLESS_WEIGHT, 6)


def latest_count_first(hits: list[Any], query: str) -> list[Any]:
    """`hits` with, for each thing counted by two or more of them with different values, those hits put in
    the places they hold, latest stated first, each with the score of its new place (a count question only;
    otherwise `hits` as they are)."""
    if answer_type.expected(query) != answer_type.COUNT:
        return hits
    out = list(hits)
    stated: dict[tuple[str, ...], list[int]] = {}
    values: dict[tuple[str, ...], set[str]] = {}
    for i, h in enumerate(out):
        for unit, value in counts(h.text).items():
            if unit[0] != BARE:
                stated.setdefault(unit, []).append(i)
                values.setdefault(unit, set()).add(value)
    for unit, slots in stated.items():
        if len(slots) < 2 or len(values[unit]) < 2:
            continue
        members = sorted((out[i] for i in slots), key=_said_at, reverse=True)
        scores = [out[i].score for i in slots]
        for i, h, score in zip(slots, members, scores, strict=True):
            out[i] = h
            h.score = score  # a hit takes its place's score too: the relevance shown stays the order
    return out


def _said_at(hit: Any) -> datetime:
    return hit.date or hit.created_at or datetime.min
