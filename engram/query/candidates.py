"""Symbolic filters: fetch candidate rows by id with status, confidence, privacy, tag and time filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engram.errors import StoreError
from engram.store import db

# The column order of each candidate query (rows come back as tuples: cheaper than a DataFrame).
COLUMNS = {
    "episodes": ("row_id", "id", "text", "role", "session_id", "kind", "origin", "created_at", "tags",
                 "content_hash", "status", "visibility", "is_private", "eligible"),
    "facts": ("row_id", "id", "text", "claim_type", "category", "confidence", "status", "created_at",
              "asserted_at", "valid_from", "valid_to", "tags", "content_hash", "visibility", "is_private",
              "eligible"),
    "kg_entities": ("row_id", "id", "name", "entity_type", "text", "confidence", "created_at", "source_refs",
                    "eligible"),
}
CANDIDATE_QUERIES = {
    "episodes": "queries/query_episode_candidates",
    "facts": "queries/query_fact_candidates",
    "kg_entities": "queries/query_kg_entity_candidates",
}
# Tables whose candidate query leaves text (and content_hash) null: the index supplies the text
TEXT_FROM_INDEX = ("episodes", "facts")


@dataclass(frozen=True)
class Filters:
    """What a row must satisfy to be returned, whatever ranked it."""

    user_id: str
    now: datetime
    as_of: datetime | None = None
    include_private: bool = False
    include_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    kinds: tuple[str, ...] | None = None
    min_confidence: float = 0.3
    decay_rate: float = 0.01

    @property
    def at(self) -> datetime:
        """The time the query answers for."""
        return self.as_of or self.now


class StaleIndex(StoreError):
    """A cached index points at rowids that no longer hold its rows; rebuild it and retry."""


def fetch(con: db.Connection, index: Any, rows: Any, f: Filters) -> dict[str, dict[str, Any]]:
    """The rows at index positions `rows` that pass the filters, keyed by id (point fetch by rowid).

    Raises StaleIndex when a rowid no longer holds the id the index expects.
    """
    rows = [int(r) for r in rows]
    if not rows:
        return {}
    table = index.table
    expected = {int(index.rowids[r]): index.ids[r] for r in rows}
    common: dict[str, Any] = {"user_id": f.user_id, "row_ids": list(expected), "include_tags": list(f.include_tags)}
    if table == "episodes":
        params = common | {
            "include_private": f.include_private, "exclude_tags": list(f.exclude_tags),
            "kinds": list(f.kinds) if f.kinds is not None else None, "as_of": f.as_of,
        }
    elif table == "facts":
        params = common | {
            "include_private": f.include_private, "exclude_tags": list(f.exclude_tags),
            "as_of": f.as_of, "now": f.now, "rate": f.decay_rate, "min_confidence": f.min_confidence,
        }
    else:
        params = common | {"min_confidence": f.min_confidence}
    names = COLUMNS[table]
    found = {}
    for values in db.rows(con, CANDIDATE_QUERIES[table], **params):
        row = dict(zip(names, values, strict=True))
        found[row["row_id"]] = row
    # an on-disk index may name rows deleted since it was published: they are gone, not a sign of staleness
    if (len(found) != len(expected) and not index.missing_ok) or any(
            found[r]["id"] != i for r, i in expected.items() if r in found):
        stale = StaleIndex(f"{table} index of the tenant is stale")
        stale.key = index.key
        stale.persisted = index.missing_ok
        raise stale
    if table in TEXT_FROM_INDEX:  # text is immutable: the index holds it (content_hash is derived on demand)
        at = {int(index.rowids[r]): r for r in rows}
        for rowid, row in found.items():
            if row["eligible"]:
                row["text"] = index.candidate_text(at[rowid], row.get("role"))
    return {row["id"]: row for row in found.values() if row["eligible"]}


def retrying(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call fn; on StaleIndex drop the stale index and call it once more (it rebuilds)."""
    from engram.query.persisted import PERSISTED
    from engram.query.vector_index import CACHE

    try:
        return fn(*args, **kwargs)
    except StaleIndex as exc:
        if getattr(exc, "persisted", False):
            PERSISTED.broken(exc.key)  # the exact in-memory index serves until the next publish
        else:
            CACHE.invalidate(exc.key)
        return fn(*args, **kwargs)
