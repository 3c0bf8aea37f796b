"""The order of a search's results for a question asking a quantity: the memories that can answer it first,
the latest value of a count first.

"How many words does my draft have?": a memory stating no count ("The user is finalizing the draft by May
15") may be about the draft, but it cannot answer, so its score is weighed by ANSWERLESS_WEIGHT before the
search cuts its candidates (engram.query.ranking.rank); of two results counting the same thing ("4,500 words
to submit", later "the final draft reached 4,700 words"), the later is the current value and takes the
earlier one's place when it ranked below it (engram.text.answer_type, engram.text.counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from engram.text import answer_type
from engram.text.counts import BARE, counts
from engram.text.sentences import DIGEST

ANSWERLESS_WEIGHT = 0.5  # the score of a memory that states no value of the kind the question asks for


def weights(texts: Sequence[str], query: str) -> np.ndarray | None:
    """Each text's score weight for `query`: ANSWERLESS_WEIGHT where the text states no value of the kind the
    query asks for, 1 elsewhere; None when the query asks for no such value."""
    kind = answer_type.expected(query)
    if kind is None:
        return None
    return np.array([1.0 if answer_type.states(t, kind) else ANSWERLESS_WEIGHT for t in texts])


def latest_count_first(hits: list[Any], query: str) -> list[Any]:
    """`hits` with, for each thing counted by two or more of them with different values, those hits put in
    the places they hold, latest stated first, each with the score of its new place (a count question only;
    otherwise `hits` as they are)."""
    if answer_type.expected(query) != answer_type.COUNT:
        return hits
    out = list(hits)
    stated: dict[tuple[str, ...], list[Any]] = {}
    values: dict[tuple[str, ...], set[str]] = {}
    for h in out:
        if getattr(h, "claim_type", None) == DIGEST:
            continue  # a digest lists what several turns said: no one value of its own
        for unit, value in counts(h.text).items():
            if unit[0] != BARE:
                stated.setdefault(unit, []).append(h)
                values.setdefault(unit, set()).add(value)
    for unit, holders in stated.items():
        if len(holders) < 2 or len(values[unit]) < 2:
            continue
        place = {id(h): i for i, h in enumerate(out)}  # where each hit is now: an earlier unit may have moved it
        slots = sorted(place[id(h)] for h in holders)
        members = sorted(holders, key=_said_at, reverse=True)
        scores = [out[i].score for i in slots]
        for i, h, score in zip(slots, members, scores, strict=True):
            out[i] = h
            h.score = score  # a hit takes its place's score too: the relevance shown stays the order
    return out


def _said_at(hit: Any) -> datetime:
    return hit.date or hit.created_at or datetime.min
