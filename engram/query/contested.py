"""Memories in dispute: a contradiction review names the fact (or the fact an episode states) and has not
been applied yet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.store import db

QUERIES = {"facts": ("queries/query/contested_facts", "fact_ids"),
           "episodes": ("queries/query/contested_episodes", "episode_ids")}


def disputed(con: db.Connection, table: str, user_id: str, ids: Sequence[str]) -> set[str]:
    """The ids among `ids` (of "facts" or "episodes") a pending contradiction review names."""
    query, param = QUERIES[table]
    return {r[0] for r in db.rows(con, query, user_id=user_id, **{param: list(ids)})}


def mark_contested(con: db.Connection | None, hits: Sequence[Any], user_id: str) -> None:
    """Set `contested` on the hits a pending contradiction review names (an episode: through the fact taken
    from it), one query per table. Without a connection (another process holds the store) the reviews
    cannot be read and nothing is marked."""
    if con is None:
        return
    for table in QUERIES:
        rows = [h for h in hits if h.table == table]
        if not rows:
            continue
        named = disputed(con, table, user_id, [h.id for h in rows])
        for h in rows:
            h.contested = h.id in named
