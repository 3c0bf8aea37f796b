"""Keys derived from a fact's text and kept on its row, so a night reads only the facts it needs.

`statement_key`: the statement's words; two facts with one key state the same thing (extract skips a
statement an active fact already makes). `frame_key`: the frame of a statement that can be updated
(engram.consolidate.updates), '' when it has none; a new fact supersedes only facts of its frame.
`valence_code` (pair_rules.valence_code): what the contradiction rules need of the text before they can
name a reason; a night screens its similar pairs by two codes (pair_rules.codes_may_conflict,
codes_may_contradict) and reads the texts of the few that pass.
All three are pure functions of the text, which never changes, so each fact is keyed once. KEYS_VERSION
names the rule: after a change to it, the next night re-keys every active fact (one full pass).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import pyarrow as pa

from engram.consolidate.pair_rules import valence_code
from engram.consolidate.updates import update_frame
from engram.store import db
from engram.text.tokens import words

KEYS_VERSION = 3  # 2: valence_code; 3: a number after the leading name is part of the subject ("User 2")
# extract keys each new statement, and the confidence stage keys the same texts again to store them on the
# new facts (refresh): the second time is a lookup
_KEY_CACHE = 1 << 16


@lru_cache(maxsize=_KEY_CACHE)
def statement_key(text: str) -> str:
    """Two statements with the same words (case and punctuation aside) state the same thing."""
    return " ".join(words(text))


@lru_cache(maxsize=_KEY_CACHE)
def frame_key(text: str) -> str:
    """The frame a newer value of this statement would share with it; '' when it cannot be updated."""
    framed = update_frame(text)
    return framed[0] if framed is not None else ""


def _unkeyed(con: db.Connection, user_id: str) -> list[tuple]:
    """(id, text, valid_from) of the tenant's active facts not keyed by the current rule."""
    return db.rows(con, "queries/consolidate/facts_without_keys", user_id=user_id, version=KEYS_VERSION)


def refresh(con: db.Connection, user_id: str) -> int:
    """Key the tenant's active facts that are not keyed by the current rule; the number keyed."""
    rows = _unkeyed(con, user_id)
    if not rows:
        return 0
    ids, texts = [r[0] for r in rows], [r[1] for r in rows]
    keys = pa.table({"id": pa.array(ids, pa.string()),
                     "statement_key": pa.array([statement_key(t) for t in texts], pa.string()),
                     "frame_key": pa.array([frame_key(t) for t in texts], pa.string()),
                     "valence_code": pa.array([valence_code(t) for t in texts], pa.int32())})
    with db.transaction(con), db.registered(con, "incoming_fact_keys", keys):
        db.execute(con, "queries/consolidate/store_fact_keys", user_id=user_id, version=KEYS_VERSION)
    return len(ids)


def known_statements(con: db.Connection, user_id: str, keys: Iterable[str], store: bool = True) -> set[str]:
    """The keys among `keys` that an active fact of the tenant already states. Facts not yet keyed are
    keyed first, or, with store=False (a dry run writes nothing), keyed in memory for this answer."""
    wanted = sorted(set(keys))
    if not wanted:
        return set()
    pending = [] if store else _unkeyed(con, user_id)
    if store:
        refresh(con, user_id)
    with db.registered(con, "wanted_keys", pa.table({"key": pa.array(wanted, pa.string())})):
        found = {k for (k,) in db.rows(con, "queries/consolidate/known_statement_keys", user_id=user_id)}
    return found | ({statement_key(text) for _, text, _ in pending} & set(wanted))


def facts_sharing_frames(con: db.Connection, user_id: str, fact_ids: Iterable[str], store: bool = True) -> list[tuple]:
    """(id, text, valid_from) of the active facts in the frame of any of `fact_ids`, by id. Facts not yet
    keyed are keyed first, or, with store=False (a dry run writes nothing), keyed in memory."""
    wanted = sorted(set(fact_ids))
    if not wanted:
        return []
    pending = [] if store else _unkeyed(con, user_id)
    if store:
        refresh(con, user_id)
    pending_frames = {fid: frame_key(text) for fid, text, _ in pending}
    with db.registered(con, "framed_facts", pa.table({"id": pa.array(wanted, pa.string())})):
        frames = dict(db.rows(con, "queries/consolidate/fact_frames", user_id=user_id)) | pending_frames
    asked = sorted({frames[f] for f in wanted if frames.get(f)})
    if not asked:
        return []
    with db.registered(con, "wanted_frames", pa.table({"frame": pa.array(asked, pa.string())})):
        keyed = db.rows(con, "queries/consolidate/facts_in_frames", user_id=user_id)
    extra = [r for r in pending if pending_frames[r[0]] in asked]
    return sorted({r[0]: r for r in [*keyed, *extra]}.values(), key=lambda r: r[0])
