"""Fold inbox segments into the store: idempotent, with ingest's exact-repeat rules, nothing dropped.

Consecutive segments' rows are inserted as ingest inserts a batch (a repeat of a stored record adds
nothing), in one transaction, and only then are the segments marked folded; a kill in between folds them
again and adds nothing twice. A record whose explicit id the store holds for other content cannot be
stored: it is kept in the tenant's inbox `rejected/` folder with the reason, and counted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from engram.store import db, inbox
from engram.store.crash import crash_point
from engram.store.insert import IngestResult, insert_rows

log = logging.getLogger(__name__)

GROUP_ROWS = 10_000  # rows of segments folded in one transaction at most


@dataclass
class FoldResult:
    """What a fold did: segments folded, rows stored, repeats skipped, records refused (kept aside)."""

    segments: int = 0
    inserted: int = 0
    repeats: int = 0
    rejected: int = 0
    tenants: list[str] = field(default_factory=list)

    def add(self, other: FoldResult) -> None:
        self.segments += other.segments
        self.inserted += other.inserted
        self.repeats += other.repeats
        self.rejected += other.rejected
        self.tenants = sorted(set(self.tenants) | set(other.tenants))


def fold_tenants(con: db.Connection, settings: Any, users: Iterable[str],
                 vectors_of: tuple[str, int] | None = None) -> FoldResult:
    """Fold the pending segments of these tenants into the store `con` holds (`vectors_of`: the active
    embedder's (model, dim), whose vectors the embedding worker may have kept beside a segment)."""
    total = FoldResult()
    pending = [(seg, inbox.read(seg)) for user in sorted(set(users))
               for seg in inbox.segments(settings, user) if not seg.folded]
    for group in fold_groups(pending):  # tenants together: each insert costs a few DuckDB statements
        total.add(fold_segments(con, group, vectors_of))
    return total


def fold_inbox(con: db.Connection, settings: Any, vectors_of: tuple[str, int] | None = None) -> FoldResult:
    """Fold every tenant's pending segments of this store (one shard file)."""
    return fold_tenants(con, settings, inbox.tenants(settings), vectors_of)


Read = tuple[inbox.Segment, pa.Table | None]  # a segment and its rows (None: gone since listed)


def fold_groups(segments: list[Read], max_rows: int = GROUP_ROWS) -> Iterator[list[Read]]:
    """Consecutive segments that one insert can fold: an agent writes a segment per add, and an insert
    per segment cost the worker ~16 ms each. A segment naming a (tenant, id) the group already holds,
    given or derived, starts a new group: a later record reusing an id for other content is then refused,
    and one repeating it skipped, as on its own (one batch would take the first for a repeat, or try to
    store both under the id); `max_rows` bounds a transaction."""
    group: list[Read] = []
    ids: set[tuple[str, str]] = set()
    rows = 0
    for seg, table in segments:
        if table is None:  # folded by another process since it was listed
            continue
        named = set(zip(table["user_id"].to_pylist(), table["id"].to_pylist(), strict=True))
        if group and (rows + table.num_rows > max_rows or not ids.isdisjoint(named)):
            yield group
            group, ids, rows = [], set(), 0
        group.append((seg, table))
        ids |= named
        rows += table.num_rows
    if group:
        yield group


def fold_segments(con: db.Connection, group: list[Read], vectors_of: tuple[str, int] | None = None) -> FoldResult:
    """Insert the rows of a group of segments (fold_groups) in one transaction, keep aside each record
    the store refuses, then mark every segment folded."""
    out = FoldResult()
    rows: list[dict[str, Any]] = []
    spans: list[tuple[inbox.Segment, int, int]] = []  # each segment's rows in `rows`
    for seg, table in group:
        mine = table.to_pylist()
        if vectors_of is not None:
            _attach_vectors(seg, mine, *vectors_of)
        spans.append((seg, len(rows), len(rows) + len(mine)))
        rows.extend(mine)
    result = IngestResult(received=len(rows))
    insert_rows(con, list(enumerate(rows, start=1)), True, result)
    crash_point("fold_before_mark")
    reasons = {e.line: e.reason for e in result.invalid}
    for seg, start, end in spans:
        refused = [n for n in range(start + 1, end + 1) if n in reasons]
        if refused:
            inbox.write_rejected(seg, [json.dumps({"reason": reasons[n], "record": rows[n - 1]}, default=str)
                                       for n in refused])
            log.warning("inbox: %d record(s) of a segment refused (an id stored for other content); kept in %s",
                        len(refused), seg.path.parent / inbox.REJECTED)
        inbox.mark_folded(seg)
    out.tenants = sorted({row["user_id"] for row in rows})
    out.segments, out.inserted, out.rejected = len(spans), result.inserted, len(result.invalid)
    out.repeats = len(rows) - result.inserted - len(result.invalid)
    return out


def _attach_vectors(seg: inbox.Segment, rows: list[dict[str, Any]], model: str, dim: int) -> None:
    """Give rows without a vector the ones the embedding worker kept for this segment."""
    vectors = inbox.read_vectors(seg, model, dim, len(rows))
    if vectors is None:
        return
    for row, vec in zip(rows, vectors, strict=True):
        if row["embedding"] is None and np.isfinite(vec).all():
            row.update(embedding=vec.tolist(), embedding_model=model, embedding_dim=dim, status="active")
