"""A tenant's part of the parquet archive: its partitions, manifest entries, and its rows in any shared file.

The archive keeps a tenant's files under `table=<t>/user_id=<tenant>/`, so erasing usually removes
directories and `_manifest/<export_id>.json` entries. A file elsewhere that holds some of the tenant's
rows among others' is rewritten without them, read back and verified, and its manifest row and entry
get the new counts and hashes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engram.archive.files import BATCH_ROWS, COMPRESSION, MANIFEST_DIR, file_sha256, user_dir, verify
from engram.archive.hashing import digest
from engram.erase.files import Removed, remove_tree
from engram.errors import StoreError
from engram.store import db
from engram.store.durable import fsync_dir, write_then_rename


@dataclass
class ArchiveErased:
    """What left the archive: files and bytes removed, manifest entries, and shared files rewritten."""

    removed: Removed = field(default_factory=Removed)
    manifest_entries: int = 0
    rewritten: list[str] = field(default_factory=list)
    rewritten_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**self.removed.to_dict(), "manifest_entries": self.manifest_entries,
                "rewritten_files": len(self.rewritten), "rewritten_rows": self.rewritten_rows}


def tenant_exports(con: db.Connection, user_id: str) -> list[tuple[str, str]]:
    """(export_id, relative path) of every archive file the manifest lists for the tenant."""
    return [(x, p) for x, p in db.rows(con, "erase/tenant_archive_exports", user_id=user_id)]


def erase_archive(settings: Any, con: db.Connection, user_id: str, exports: list[tuple[str, str]],
                  dry_run: bool) -> ArchiveErased:
    """Remove the tenant's archive files (exports: tenant_exports, read before its rows left the store) and
    manifest entries; rewrite shared files without its rows (their manifest rows are updated through con)."""
    root = Path(settings.archive_dir)
    out = ArchiveErased()
    if not root.is_dir():
        return out
    mine = user_dir(user_id)
    gone = {root / rel for _export_id, rel in exports}  # a file set aside (abandoned) may lie elsewhere
    gone |= {d / f"user_id={mine}" for d in root.glob("table=*") if d.is_dir() and not d.is_symlink()}
    gone = {p for p in gone if not gone.intersection(p.parents)}  # each file counted once
    for path in sorted(gone):
        out.removed.add(remove_tree(path, dry_run))
    ids = {export_id for export_id, _ in exports}
    for entry in sorted((root / MANIFEST_DIR).glob("*.json")):
        if entry.stem in ids or _entry_user(entry) == user_id:
            out.removed.add(remove_tree(entry, dry_run))
            out.manifest_entries += 1
    for path in _parquet_files(root):
        if gone.intersection([path, *path.parents]):  # counted above (a dry run leaves it in place)
            continue
        hers = _rows_of(path, user_id)
        if hers is None:
            continue
        if hers == pq.ParquetFile(path).metadata.num_rows:
            out.removed.add(remove_tree(path, dry_run))
            continue
        out.rewritten.append(str(path.relative_to(root)))
        out.rewritten_rows += hers
        if not dry_run:
            _rewrite_without(con, root, path, user_id)
    return out


def _entry_user(path: Path) -> str | None:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("user_id")
    except (OSError, ValueError, AttributeError):
        return None


def _parquet_files(root: Path) -> list[Path]:
    """Every archive data file left (written, set aside or half-written), never following a symlink."""
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != MANIFEST_DIR)
        found += [Path(folder) / n for n in sorted(names) if ".parquet" in n]
    return found


def _rows_of(path: Path, user_id: str) -> int | None:
    """How many of a file's rows are the tenant's (None: none, or not a parquet file with a user_id column)."""
    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException, ValueError):
        return None
    names = parquet.schema_arrow.names
    if "user_id" not in names:
        return None
    column = names.index("user_id")
    n = 0
    for i in range(parquet.num_row_groups):
        stats = parquet.metadata.row_group(i).column(column).statistics
        if stats is not None and stats.has_min_max and not stats.min <= user_id <= stats.max:
            continue  # the row group's user_ids lie on one side of the tenant's
        ids = parquet.read_row_group(i, columns=["user_id"]).column(0)
        n += int(pc.sum(pc.equal(ids, user_id)).as_py() or 0)
    return n or None


def _rewrite_without(con: db.Connection, root: Path, path: Path, user_id: str) -> None:
    """Replace a shared archive file by a verified copy without the tenant's rows; update its manifest."""
    table = pq.read_table(path)
    keep = table.filter(pc.not_equal(table["user_id"], user_id))
    rows, content_hash = digest([keep])
    tmp = path.with_name(f".{path.name}.forget-{os.getpid()}")
    try:
        pq.write_table(keep, tmp, compression=COMPRESSION, row_group_size=BATCH_ROWS)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        problems = verify(tmp, rows, content_hash)
        if problems:
            raise StoreError("archive_dir: rewriting a shared file failed verification: " + "; ".join(problems))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    rel = str(path.relative_to(root))
    sha, size = file_sha256(path), path.stat().st_size
    for export_id, _owner in db.rows(con, "erase/export_of_path", path=rel):
        db.execute(con, "erase/rewrite_export_file", export_id=export_id, row_count=rows, content_hash=content_hash,
                   file_sha256=sha, file_bytes=size)
        _rewrite_entry(root / MANIFEST_DIR / f"{export_id}.json", rows, content_hash, sha, size)


def _rewrite_entry(path: Path, rows: int, content_hash: str, sha: str, size: int) -> None:
    """A manifest entry with a rewritten file's new counts and hashes (written whole, then renamed over)."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    entry.update(row_count=rows, content_hash=content_hash, file_sha256=sha, file_bytes=size)
    body = json.dumps(entry, default=str, indent=2).encode("utf-8")
    write_then_rename(path, lambda fh: fh.write(body), path.with_name(f".{path.name}.forget-{os.getpid()}"))
    fsync_dir(path.parent)
