"""Row counts per table, tenant and status: from the live store, or from the read snapshot while
another process (the night) holds it, so `engram stats` and the MCP stats tool never wait for it.

The snapshot is what the last publish exported (private rows only with ENGRAM_SNAPSHOT_INCLUDE_PRIVATE);
the episodes written since wait in the inbox and are counted apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engram.store import db, inbox
from engram.store.sharding import stores_for
from engram.store.snapshot import VIEWS_FILE, NoSnapshot, hold_snapshot

SNAPSHOT_TABLES = ("episodes", "facts", "fact_sources", "fact_history", "llm_reviews")


@dataclass
class Counts:
    """What `stats` shows: rows (table, tenant, status, n) and contradiction counts, and where they come from."""

    rows: list[tuple] = field(default_factory=list)
    contradictions: list[tuple] = field(default_factory=list)
    source: str = "store"  # "store": the live store; "snapshot": the read snapshot (the store was held)
    snapshot_id: str | None = None
    snapshot_at: datetime | None = None
    includes_private: bool = True
    inbox_since: int = 0  # with source "snapshot": episodes written since it, waiting in the inbox

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "snapshot_id": self.snapshot_id,
                "snapshot_at": self.snapshot_at.isoformat() if self.snapshot_at else None,
                "includes_private": self.includes_private, "inbox_since": self.inbox_since}


def counts(settings: Any, user_id: str | None, wait: bool = False,
           on_wait: Callable[[Any], None] | None = None) -> Counts:
    """Counts of the tenant (None: every tenant): the live store's when it is free (or `wait`), else the
    latest snapshot's; with no snapshot yet, the live store's after waiting for it (`on_wait(shard)`
    is told first)."""
    shards = stores_for(settings, user_id)
    out = Counts()
    held = []
    for shard in shards:
        with db.open_reader_if_free(shard) as con:
            if con is not None:
                _add_live(out, con, user_id)
                continue
        held.append(shard)
    if held and not wait:
        try:
            return _from_snapshot(settings, user_id, shards)
        except NoSnapshot:
            pass  # nothing published yet: the live counts are the only ones
    for shard in held:
        if on_wait is not None:
            on_wait(shard)
        with db.open_store(shard, read_only=True) as con:
            _add_live(out, con, user_id)
    if len(shards) > 1:
        out.rows.sort(key=lambda r: tuple(str(v) for v in r[:3]))
        out.contradictions.sort()
    return out


def _add_live(out: Counts, con: db.Connection, user_id: str | None) -> None:
    out.rows += db.rows(con, "queries/store/stats", user_id=user_id)
    out.contradictions += db.rows(con, "queries/store/stats_contradictions", user_id=user_id)


def _from_snapshot(settings: Any, user_id: str | None, shards: list[Any]) -> Counts:
    with hold_snapshot(settings) as path:
        globs = {name: str(path.resolve() / name / "*.parquet") for name in SNAPSHOT_TABLES}
        with db.connect(path / VIEWS_FILE, read_only=True, lock_timeout_s=settings.lock_timeout_s) as con:
            ((snapshot_id, made_at, private),) = db.rows(con, "queries/store/snapshot_info")
            rows = db.rows(con, "queries/store/stats_of_snapshot", user_id=user_id, **globs)
            contra = db.rows(con, "queries/store/stats_contradictions_of_snapshot", user_id=user_id,
                             **{k: v for k, v in globs.items() if k != "episodes"})
    since = sum(_inbox_rows_since(shard, user_id, made_at) for shard in shards)
    return Counts(rows, contra, "snapshot", snapshot_id, made_at, bool(private), since)


def _inbox_rows_since(settings: Any, user_id: str | None, moment: datetime) -> int:
    """Rows of the inbox segments written after `moment` (naive UTC), of the tenant or every tenant."""
    after_ns = int((moment - datetime(1970, 1, 1)).total_seconds() * 1e9)
    n = 0
    for tenant in [user_id] if user_id else inbox.tenants(settings):
        for seg in inbox.segments(settings, tenant):
            if int(seg.stem.split("-", 1)[0]) > after_ns:
                table = inbox.read(seg)
                n += table.num_rows if table is not None else 0
    return n
