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
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from engram.text.atomic import tense
from engram.text.sentences import claim_type, frame_of


@dataclass(frozen=True)
class Update:
    """The older fact `old_id` is superseded by `new_id` from `valid_to` on."""

    old_id: str
    new_id: str
    valid_to: datetime


def update_frame(text: str) -> tuple[str, frozenset[str]] | None:
    """(frame, values) of a statement that can be updated: a state with a value, or an answered question."""
    frame, value = frame_of(text)
    if frame is None or not value:
        return None
    answered = "?" in text.rstrip("?")
    if answered or (tense(text) != "past" and claim_type(text) != "preference"):
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
