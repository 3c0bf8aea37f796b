"""Fold inbox segments into the store: idempotent, with ingest's exact-repeat rules, nothing dropped.

A segment's rows are inserted as ingest inserts a batch (a repeat of a stored record adds nothing), in one
transaction, and only then is the segment marked folded; a kill in between folds it again and adds
nothing twice. A record whose explicit id the store holds for other content cannot be stored: it is
kept in the tenant's inbox `rejected/` folder with the reason, and counted.

A segment that cannot be read (truncated, damaged, of another schema or tenant) is quarantined, named, and
the fold goes on with the tenant's other segments and every other tenant: one bad file never stops the
store. Each pass also removes the temporary files of writers killed mid-write (older than TMP_MAX_AGE_S).

One insert per segment, although an agent writes a segment per add and each insert costs a few DuckDB
statements: folding consecutive segments in one insert lost acknowledged records under kill -9 in
bench/perf/inbox_kills.py, for a cause not found.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engram.errors import InboxCorrupt, StoreError
from engram.store import db, inbox, inbox_notices
from engram.store.crash import crash_point
from engram.store.inbox_notices import Notice
from engram.store.insert import IngestResult, insert_rows

log = logging.getLogger(__name__)

TMP_MAX_AGE_S = 15 * 60  # a writer's temporary file lives for milliseconds; one this old lost its writer


@dataclass
class FoldResult:
    """What a fold did: segments folded, rows stored, repeats skipped, records refused (kept aside)."""

    segments: int = 0
    inserted: int = 0
    repeats: int = 0
    rejected: int = 0
    tenants: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)  # where each segment that could not be read went

    def add(self, other: FoldResult) -> None:
        self.segments += other.segments
        self.inserted += other.inserted
        self.repeats += other.repeats
        self.rejected += other.rejected
        self.tenants = sorted(set(self.tenants) | set(other.tenants))
        self.quarantined += other.quarantined


def fold_tenants(con: db.Connection, settings: Any, users: Iterable[str],
                 vectors_of: tuple[str, int] | None = None) -> FoldResult:
    """Fold the pending segments of these tenants into the store `con` holds (`vectors_of`: the active
    embedder's (model, dim), whose vectors the embedding worker may have kept beside a segment)."""
    total = FoldResult()
    for user in sorted(set(users)):
        inbox.clean_temporaries(settings, user, TMP_MAX_AGE_S)
        for seg in inbox.segments(settings, user):
            if not seg.folded:
                total.add(fold_segment(con, seg, user, vectors_of))
    return total


def fold_inbox(con: db.Connection, settings: Any, vectors_of: tuple[str, int] | None = None) -> FoldResult:
    """Fold every tenant's pending segments of this store (one shard file)."""
    return fold_tenants(con, settings, inbox.tenants(settings), vectors_of)


def fold_segment(con: db.Connection, seg: inbox.Segment, user: str,
                 vectors_of: tuple[str, int] | None = None) -> FoldResult:
    """Insert one segment's rows, keep aside the ones the store refuses, then mark it folded."""
    out = FoldResult(tenants=[user])
    try:
        table = inbox.read_checked(seg)
    except InboxCorrupt as exc:  # moved aside with the reason; the other segments go on
        reason = str(exc).removeprefix(f"inbox segment {seg.path}: ")
        try:
            out.quarantined.append(str(inbox.quarantine(seg, reason)))
        except (OSError, StoreError) as moving:  # left in place (readers skip it): the next fold tries again
            log.error("inbox: segment %s cannot be read (%s) nor moved aside: %s", seg.path, reason, moving)
            inbox_notices.add(Notice("quarantined", str(seg.path), f"{reason}; could not be moved: {moving}"))
            out.quarantined.append(str(seg.path))
        return out
    if table is None:  # folded by another process since it was listed
        return out
    rows = table.to_pylist()
    if vectors_of is not None:
        _attach_vectors(seg, rows, *vectors_of)
    result = IngestResult(received=len(rows))
    insert_rows(con, list(enumerate(rows, start=1)), True, result)
    crash_point("fold_before_mark")
    if result.invalid:
        reasons = {e.line: e.reason for e in result.invalid}
        kept = inbox.write_rejected(seg, [json.dumps({"reason": reasons[n], "record": rows[n - 1]}, default=str)
                                          for n in sorted(reasons)])
        log.warning("inbox: %d record(s) of a segment refused (an id stored for other content); kept in %s",
                    len(reasons), kept)
        inbox_notices.add(Notice("rejected", str(kept), "an explicit id stored for other content", len(reasons)))
    inbox.mark_folded(seg)
    out.segments, out.inserted, out.rejected = 1, result.inserted, len(result.invalid)
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
