"""Insert validated episode rows into the store with ingest's exact-repeat rules (one transaction per batch).

Shared by ingest (a batch from a caller) and the inbox fold (a segment written while the store was held).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from engram.errors import InvalidInput, StoreError
from engram.settings import Settings
from engram.store import db, inbox
from engram.store.episode_schema import EPISODE_SCHEMA


@dataclass(frozen=True)
class RowError:
    """One rejected input row: its 1-based line (or row) number, the field and why."""

    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.reason}"


@dataclass
class IngestResult:
    """What an ingest did."""

    received: int = 0
    inserted: int = 0
    duplicates: int = 0
    invalid: list[RowError] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    queued: int = 0  # records appended to the inbox while the store was held (folded into it later)


class IngestRejected(InvalidInput):
    """The whole batch was rejected; `errors` lists every bad row."""

    def __init__(self, errors: list[RowError]) -> None:
        self.errors = errors
        shown = "; ".join(str(e) for e in errors[:20])
        more = f" (and {len(errors) - 20} more)" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} invalid row(s), nothing ingested: {shown}{more}")

    @classmethod
    def summary(cls, errors: list[RowError], note: str = "") -> InvalidInput:
        """The one-line count for a caller that already printed every row error."""
        return InvalidInput(f"{len(errors)} invalid row(s), nothing ingested{note}")


def natural_key(row: Mapping[str, Any]) -> tuple:
    """The record's session, role, time and content: a record given twice without an id is a retry."""
    return (row["user_id"], row["session_id"], row["role"], row["created_at"], row["content_hash"])


def record_key(row: Mapping[str, Any]) -> tuple:
    """What makes two records the same record: the explicit id, else the natural key."""
    return (row["user_id"], "id", row["id"]) if row["id_given"] else natural_key(row)




def _stored_ids_sharing_a_natural_key(con: db.Connection, rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(user_id, id) already stored, of the explicit ids whose natural key a record without id shares."""
    without_id = {natural_key(r) for r in rows if not r["id_given"]}
    probe = sorted({r["id"] for r in rows if r["id_given"] and natural_key(r) in without_id})
    return {(u, i) for u, i in db.rows(con, "queries/store/episode_ids_stored", ids=probe)} if probe else set()


def distinct_records(
    numbered: list[tuple[int, dict[str, Any]]], stored: set[tuple[str, str]] = frozenset()  # type: ignore[assignment]
) -> tuple[dict[tuple, dict[str, Any]], list[tuple]]:
    """The batch's distinct records by record key, and each record's key (the exact-repeat rules within
    a batch; `stored`: (user_id, id) of explicit ids the store holds whose natural key a record shares)."""
    unique: dict[tuple, dict[str, Any]] = {}
    by_natural: dict[tuple, tuple] = {}
    keys: list[tuple] = []
    for _, row in numbered:
        key = record_key(row)
        if not row["id_given"]:
            key = by_natural.get(key, key)
        kept = unique.setdefault(key, row)
        # A record without id repeats the record kept under an id, not a discarded retry of it that
        # named another session or role; and an id already stored keeps its stored natural key.
        if not (kept["id_given"] and (kept["user_id"], kept["id"]) in stored):
            by_natural.setdefault(natural_key(kept), key)
        keys.append(key)
    return unique, keys


log = logging.getLogger(__name__)


def _journal_missed(settings: Settings, user: str, n: int, exc: BaseException) -> None:
    """A committed write whose journal segment could not be written: the rows are stored (the write
    reports success); only a reader that finds the store held misses them, until the next publish of the
    tenant, which the mark asks the embedding worker for."""
    marked = inbox.mark_unjournaled(settings, user)
    log.warning("write: %d episode(s) stored, but not journalled in the inbox (%s); searches while the store "
                "is held miss them until the tenant's next publish%s", n, exc,
                "" if marked else " (the mark asking for it could not be written either)")


def insert_rows(
    con: db.Connection, numbered: list[tuple[int, dict[str, Any]]], skip_invalid: bool, result: IngestResult,
    journal: Settings | None = None,
) -> list[str]:
    """Append the batch's distinct records in one transaction; return each record's stored id.

    A record without an id repeats an earlier one (in the batch or the store) with the same natural
    key. A record whose explicit id is already stored for other content is a row error (the batch
    is rejected unless skip_invalid, then that row is skipped and gets no id).
    """
    stored = _stored_ids_sharing_a_natural_key(con, [row for _, row in numbered])
    unique, keys = distinct_records(numbered, stored)
    table = pa.Table.from_pylist(list(unique.values()), schema=EPISODE_SCHEMA)
    # registered outside the transaction: unregistering inside an aborted one would mask the error
    with db.registered(con, "incoming_episodes", table), db.transaction(con):
        # (user_id, id): a batch may hold several tenants' records, and an id is one tenant's
        conflicts = {(u, i) for u, i in db.rows(con, "queries/store/episode_id_conflicts")}
        if conflicts:
            errors = [RowError(n, "id", f"{r['id']!r} is already stored with different content")
                      for n, r in numbered if r["id_given"] and (r["user_id"], r["id"]) in conflicts]
            if not skip_invalid:
                raise IngestRejected(errors)
            result.invalid.extend(errors)
        before = db.rows(con, "queries/store/count_episodes")[0][0]
        db.execute(con, "queries/store/insert_episodes")
        after = db.rows(con, "queries/store/count_episodes")[0][0]
        renamed = {(u, i): stored for u, i, stored in db.rows(con, "queries/store/episode_ids_stored_under_other_id")}
    result.inserted = after - before
    if journal is not None and result.inserted:
        # readers that find the store held see these rows through the inbox until a publish covers them
        written = table.filter(pa.array([(r["user_id"], r["id"]) not in conflicts for r in unique.values()],
                                        pa.bool_()))
        for user in sorted(set(written.column("user_id").to_pylist())):
            rows = written.filter(pc.equal(written["user_id"], user))
            try:
                inbox.write_segment(journal, user, rows, folded=True)
            except (OSError, StoreError) as exc:  # stored: the write succeeded, only the journal is missing
                _journal_missed(journal, user, rows.num_rows, exc)
    ids: list[str] = []
    for key in keys:
        row = unique[key]
        if not (row["id_given"] and (row["user_id"], row["id"]) in conflicts):
            ids.append(renamed.get((row["user_id"], row["id"]), row["id"]))
    return ids
