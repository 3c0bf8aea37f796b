"""Literal rows for Thought-DB tests: episodes and claims seeded straight into a test store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

T0 = datetime(2026, 1, 1, 12, 0, 0)


def episode(con, user: str, episode_id: str, content: str = "something happened", kind: str = "turn",
            is_private: bool = False, created_at: datetime = T0) -> str:
    """Insert one episode and return its id."""
    con.execute(
        "insert into episodes (id, user_id, kind, content, created_at, content_hash, is_private, status, "
        "visibility) values (?, ?, ?, ?, ?, ?, ?, 'active', ?)",
        [episode_id, user, kind, content, created_at, f"h-{episode_id}", is_private,
         "private" if is_private else "project"])
    return episode_id


def claim(con, user: str, claim_id: str, text: str = "a claim", sources: Sequence[str] = (),
          status: str = "active", confidence: float = 0.8, valid_from: datetime | None = None,
          valid_to: datetime | None = None, claim_type: str = "fact", is_private: bool = False) -> str:
    """Insert one claim (a facts row) with extracted_from sources and return its id."""
    con.execute(
        "insert into facts (id, user_id, text, claim_type, confidence, status, asserted_at, valid_from, "
        "valid_to, created_at, last_updated, last_reinforced_at, content_hash, is_private) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [claim_id, user, text, claim_type, confidence, status, T0, valid_from, valid_to, T0, T0, T0,
         f"h-{claim_id}", is_private])
    for ep in sources:
        con.execute("insert into fact_sources (user_id, fact_id, episode_id, relation) "
                    "values (?, ?, ?, 'extracted_from')", [user, claim_id, ep])
    return claim_id


def edge(con, user: str, edge_type: str, from_id: str, to_id: str, status: str = "active") -> str:
    """Insert one edge directly (bypassing validation) and return its id."""
    edge_id = f"e-{edge_type}-{from_id}-{to_id}"
    con.execute("insert into edges (id, user_id, edge_type, from_id, to_id, status, source_refs) "
                "values (?, ?, ?, ?, ?, ?, [])", [edge_id, user, edge_type, from_id, to_id, status])
    return edge_id


def fact_row(con, user: str, claim_id: str) -> dict:
    """The stored facts row as a dict."""
    cur = con.execute("select * from facts where user_id = ? and id = ?", [user, claim_id])
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    return dict(zip(names, rows[0], strict=True)) if rows else {}


def events(con, user: str, claim_id: str) -> list[tuple]:
    """(action, status_before, status_after, related_fact_id, run_id) of a claim, oldest first."""
    return con.execute("select action, status_before, status_after, related_fact_id, run_id from fact_events "
                       "where user_id = ? and fact_id = ? order by created_at, id", [user, claim_id]).fetchall()
