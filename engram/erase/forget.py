"""`engram forget`: erase one tenant completely, from the store, its files, the archive, snapshots and logs.

Not reversible, by design: nothing is kept to undo it (no backup, no archive copy, no audit row naming
the tenant). The tenant's shard is held (the same file lock the night takes, and the tenant's lease)
from the first delete until its file has been rewritten and its inbox, indexes and archive are gone,
so no fold, publish or night brings a row back meanwhile and no other tenant's write is lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram import clock
from engram.erase.archive import ArchiveErased, erase_archive, tenant_exports
from engram.erase.catalog import count_rows, delete_rows, tenant_tables
from engram.erase.compact import rewritten_store
from engram.erase.files import Removed, remove_tree
from engram.erase.indexes import republish_indexes, tenant_index_dir
from engram.erase.logs import erase_lines, log_files, tenant_pattern
from engram.erase.snapshots import SnapshotsErased, rebuild_snapshots
from engram.index import cache as index_cache
from engram.index import vector_index
from engram.settings import Settings
from engram.store import db, inbox
from engram.store.presence import missing_store_error
from engram.store.runs import tenant_lease
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id

log = logging.getLogger(__name__)


@dataclass
class ForgetReport:
    """What an erase removed (or, with dry_run, would remove)."""

    user_id: str
    dry_run: bool
    store: str
    rows: dict[str, int] = field(default_factory=dict)
    store_bytes_before: int = 0
    store_bytes_after: int | None = None
    inbox: Removed = field(default_factory=Removed)
    indexes: Removed = field(default_factory=Removed)
    archive: ArchiveErased = field(default_factory=ArchiveErased)
    snapshots: SnapshotsErased = field(default_factory=SnapshotsErased)
    log_lines: dict[str, int] = field(default_factory=dict)
    indexes_rewritten: int = 0

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    @property
    def total_files(self) -> int:
        return self.inbox.files + self.indexes.files + self.archive.removed.files + self.snapshots.removed.files

    @property
    def complete(self) -> bool:
        """False when something could not be erased yet (a snapshot a reader holds open)."""
        return not self.snapshots.held

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "dry_run": self.dry_run, "store": self.store, "rows": self.rows,
                "total_rows": self.total_rows, "store_bytes_before": self.store_bytes_before,
                "store_bytes_after": self.store_bytes_after, "inbox": self.inbox.to_dict(),
                "indexes": self.indexes.to_dict(), "other_tenants_reindexed": self.indexes_rewritten,
                "archive": self.archive.to_dict(),
                "snapshots": self.snapshots.to_dict(), "log_lines": self.log_lines, "complete": self.complete}


def forget_tenant(settings: Settings, user_id: str, dry_run: bool = False) -> ForgetReport:
    """Erase every trace of the tenant (see the module docstring); dry_run counts and removes nothing."""
    user_id = normalise_user_id(user_id)
    shard = for_tenant(settings, user_id)
    path = Path(shard.db_path)
    if not path.is_file():
        raise missing_store_error(path)
    report = ForgetReport(user_id, dry_run, str(path), store_bytes_before=path.stat().st_size)
    if dry_run:
        with db.open_reader(shard) as con:
            report.rows = count_rows(con, tenant_tables(con), user_id)
            report.archive = erase_archive(shard, con, user_id, tenant_exports(con, user_id), dry_run=True)
        _erase_files(shard, user_id, report, dry_run=True)
    else:
        with rewritten_store(shard) as (con, rewrite):
            tables = tenant_tables(con)  # first: an unscoped table stops the erase before anything goes
            report.rows = count_rows(con, tables, user_id)  # before this erase takes the tenant's lease
            exports = tenant_exports(con, user_id)
            with tenant_lease(shard, user_id, clock.run_id("forget")):  # no night of the tenant runs meanwhile
                with db.transaction(con):
                    delete_rows(con, tables, user_id)
            # under the store's lock: no fold, publish or archive run can bring any of it back meanwhile
            report.archive = erase_archive(shard, con, user_id, exports, dry_run=False)
            _erase_files(shard, user_id, report, dry_run=False)
        report.store_bytes_after = rewrite.bytes_after
        report.indexes_rewritten = republish_indexes(shard)
        inbox.forget_listings()
        index_cache.PERSISTED.clear()
        vector_index.CACHE.clear()
    report.snapshots = rebuild_snapshots(settings, dry_run)
    pattern = tenant_pattern(user_id)
    report.log_lines = {str(p): n for p in log_files(settings) if (n := erase_lines(p, pattern, dry_run))}
    if not dry_run:  # count-level only: the erase leaves no line naming the tenant
        log.info("forget: erased one tenant (%d rows, %d files)", report.total_rows, report.total_files)
    return report


def _erase_files(shard: Settings, user_id: str, report: ForgetReport, dry_run: bool) -> None:
    report.inbox = remove_tree(inbox.tenant_dir(shard, user_id), dry_run)
    report.indexes = remove_tree(tenant_index_dir(shard, user_id), dry_run)
