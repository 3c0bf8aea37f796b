"""Symbolic filters: fetch candidate rows by index position and keep those that pass the status,
confidence, privacy, tag and time filters (`eligible`: the one definition of what a search may return)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from engram.decay import decayed
from engram.errors import StoreError
from engram.index.vector_index import CACHE
from engram.query.contested import disputed
from engram.store import db
from engram.text.sentences import LASTING_CLAIMS

# The column order of each candidate query (rows come back as tuples: cheaper than a DataFrame).
COLUMNS = {
    "episodes": ("row_id", "id", "session_id", "role", "kind", "origin", "created_at", "tags", "status",
                 "visibility", "is_private"),
    "facts": ("row_id", "id", "claim_type", "category", "confidence", "confidence_at", "status", "created_at",
              "asserted_at", "valid_from", "valid_to", "tags", "visibility", "is_private"),
    "kg_entities": ("row_id", "id", "name", "entity_type", "text", "confidence", "created_at", "source_refs",
                    "eligible"),
}
CANDIDATE_QUERIES = {
    "episodes": "queries/query/query_episode_candidates",
    "facts": "queries/query/query_fact_candidates",
    "kg_entities": "queries/query/query_kg_entity_candidates",
}
# Tables whose candidate query leaves text (and content_hash) null: the index supplies the text
TEXT_FROM_INDEX = ("episodes", "facts")


# Confidence is revised by the nightly run (evidence, contradictions, decay), so a fact's first day
# without new evidence is not yet a judgement against it: passive context forgives that day's decay.
# A fact stated once starts at initial_confidence (0.5), DESIGN's passive boundary ("0.3-0.5 only in
# active search"): it is offered from the night that made it until a day without support has passed;
# a fact halved by a contradiction, decayed past a day, or deprecated stays out.
PASSIVE_GRACE_DAYS = 1.0


@dataclass(frozen=True)
class Filters:
    """What a row must satisfy to be returned, whatever ranked it."""

    user_id: str
    now: datetime
    decay_rate: float  # the store's (settings.decay_rate): confidence is read decayed to the query's time
    as_of: datetime | None = None
    include_private: bool = False
    include_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    kinds: tuple[str, ...] | None = None
    min_confidence: float = 0.3
    # passive (memories offered unasked): a fact's standing, its confidence with the decay of its first
    # PASSIVE_GRACE_DAYS forgiven, must reach min_confidence (DESIGN's top band)
    passive: bool = False

    @property
    def at(self) -> datetime:
        """The time the query answers for."""
        return self.as_of or self.now


class StaleIndex(StoreError):
    """A cached index points at rowids that no longer hold its rows; rebuild it and retry."""


def fetch(con: db.Connection, index: Any, rows: Any, f: Filters) -> dict[str, dict[str, Any]]:
    """The rows at index positions `rows` that pass the filters, keyed by id. An on-disk index that holds
    its rows' columns (engram.index.merged) answers without the store; otherwise a point fetch by rowid.

    Raises StaleIndex when a rowid no longer holds the id the index expects.
    """
    rows = [int(r) for r in rows]
    if not rows:
        return {}
    table = index.table
    held = index.candidate_rows(rows) if table in TEXT_FROM_INDEX else None
    if held is not None:
        return _keep(index, held, f, con)
    inbox_rows = []
    if getattr(index, "inbox", None) is not None:  # rows written while the store was held: not in it yet
        first, columns = index.inbox
        inbox_rows = [r for r in rows if r >= first]
        rows = [r for r in rows if r < first]
        inbox_rows = [row | {"row_id": int(index.rowids[r]), "id": index.ids[r], "pos": r} for r, row in
                      zip(inbox_rows, columns.select([c for c in COLUMNS[table][2:] if c in columns.column_names])
                          .take(pa.array([r - first for r in inbox_rows], pa.int64())).to_pylist(),
                          strict=True)] if inbox_rows else []
    expected = {int(index.rowids[r]): index.ids[r] for r in rows}
    if table == "kg_entities":
        params: dict[str, Any] = {"user_id": f.user_id, "row_ids": list(expected),
                                  "include_tags": list(f.include_tags), "min_confidence": f.min_confidence}
    else:
        params = {"user_id": f.user_id, "row_ids": list(expected)}
    names = COLUMNS[table]
    found = {}
    for values in db.rows(con, CANDIDATE_QUERIES[table], **params) if expected else ():
        row = dict(zip(names, values, strict=True))
        found[row["row_id"]] = row
    if len(found) != len(expected) or any(found[r]["id"] != i for r, i in expected.items() if r in found):
        stale = StaleIndex(f"{table} index of the tenant is stale")
        stale.key = index.key
        raise stale
    at = {int(index.rowids[r]): r for r in rows}
    for rowid, row in found.items():
        row["pos"] = at[rowid]  # the row's position in the index
    if table == "kg_entities":  # its query decides eligibility (no index of its own on disk)
        return {row["id"]: row for row in found.values() if row.pop("eligible")}
    return _keep(index, list(found.values()) + inbox_rows, f, con)


def _keep(index: Any, rows: list[dict[str, Any]], f: Filters, con: db.Connection | None = None
          ) -> dict[str, dict[str, Any]]:
    """The eligible rows keyed by id, each with its text from the index (text is immutable; content_hash
    is derived on demand) and, for facts, its confidence decayed to the time asked about (an instruction's or
    preference's does not decay). A fact in dispute (disputed_below) is kept too."""
    out = {}
    halved: list[dict[str, Any]] = []
    for row in rows:
        if index.table == "facts":
            stored, since = row["confidence"], row.pop("confidence_at")
            if row["claim_type"] in LASTING_CLAIMS:  # an instruction, preference or digest holds until replaced
                row["confidence"] = stored
                if f.passive:
                    row["standing"] = stored
            else:
                row["confidence"] = decayed(stored, since, f.at, f.decay_rate)
                if f.passive:
                    row["standing"] = decayed(stored, since + timedelta(days=PASSIVE_GRACE_DAYS), f.at,
                                              f.decay_rate)
        if eligible(index.table, row, f):
            out[row["id"]] = row
        elif index.table == "facts" and disputed_below(row, f):
            halved.append(row)
    if halved and con is not None:
        named = disputed(con, "facts", f.user_id, [r["id"] for r in halved])
        out |= {row["id"]: row for row in halved if row["id"] in named}
    for row in out.values():
        row["text"] = index.candidate_text(row["pos"], row.get("role"))
        row["content_hash"] = None
    return out


def disputed_below(row: dict[str, Any], f: Filters) -> bool:
    """Whether a fact fails active search only by a confidence that a contradiction's halving took below the
    floor (twice it would pass): if a contradiction review not yet applied names it, it is shown, marked
    contested, rather than hidden while the dispute waits (without the store, with no reviews to read, it is
    not). Passive context never offers it."""
    return (not f.passive and row["confidence"] * 2 > f.min_confidence
            and eligible("facts", dict(row, confidence=1.0), f))


def eligible(table: str, row: dict[str, Any], f: Filters) -> bool:
    """Whether a fact or episode row may be returned: status, validity at the time asked about, privacy,
    tags, kinds, and (facts) a decayed confidence above f.min_confidence, which an instruction or preference
    need not have in active search (passive: its standing at least f.min_confidence)."""
    if not f.include_private and (row["is_private"] or row["visibility"] == "private"):
        return False
    tags = row["tags"] or ()
    if f.include_tags and not any(t in f.include_tags for t in tags):
        return False
    if any(t in f.exclude_tags for t in tags):
        return False
    at = f.at
    if table == "episodes":
        return (row["status"] in ("active", "pending_embed")
                and (f.kinds is None or row["kind"] in f.kinds)
                and (f.as_of is None or row["created_at"] <= f.as_of))
    return (row["status"] in (("active",) if f.as_of is None else ("active", "superseded"))
            and (row["valid_from"] or row["asserted_at"]) <= at
            and (row["valid_to"] is None or row["valid_to"] > at)
            and (row["standing"] >= f.min_confidence if f.passive else row["confidence"] > f.min_confidence
                 # an instruction or preference is current until revoked (never deprecated): only its
                 # halving by a contradiction lowers it, and a disputed one stays visible to active search
                 or row["claim_type"] in LASTING_CLAIMS))


def retrying(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call fn; on StaleIndex drop the stale in-memory index and call it once more (it rebuilds). An
    on-disk index never raises it: it reads no rows by rowid (engram.index.merged)."""
    try:
        return fn(*args, **kwargs)
    except StaleIndex as exc:
        CACHE.invalidate(exc.key)
        return fn(*args, **kwargs)
