"""Facts in dispute: a contradiction review names them and has not been applied yet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.store import db


def mark_contested(con: db.Connection | None, hits: Sequence[Any], user_id: str) -> None:
    """Set `contested` on the fact hits a pending contradiction review names, in one query. Without a
    connection (another process holds the store) the reviews cannot be read and nothing is marked."""
    facts = [h for h in hits if h.table == "facts"]
    if con is None or not facts:
        return
    disputed = {r[0] for r in db.rows(con, "queries/query/contested_facts", user_id=user_id,
                                      fact_ids=[h.id for h in facts])}
    for h in facts:
        h.contested = h.id in disputed
