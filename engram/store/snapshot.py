"""The read snapshot: analyst-facing parquet plus a small DuckDB file of views, switched atomically.

DuckDB lets one process write a file and locks out every other process, readers included. So the
nightly run (and `engram snapshot`) copies what analysts ask about into a new directory, and readers
(`engram sql`, the duckdb CLI) open that instead of the store: they never block the run, nor it them.

Layout under `snapshot_root` (ENGRAM_SNAPSHOT_DIR, default `snapshots/` beside the store):

    current                      the name of the latest snapshot (replaced atomically by rename)
    snap-<time>-<pid>/           one snapshot: snapshot.duckdb (views) + <view>/shard-<k>.parquet,
                                 archive/ (the archive's parquet files at their paths, private rows
                                 left out), archive_stub/ (typed empty files)

The snapshot's `archive/` holds no private row unless snapshot_include_private: a file without one is
a hard link to the archive file (a copy across file systems), a file with one is a filtered copy.
Links to the archive root would not do: DuckDB checks the resolved path of every file against
allowed_directories, so the archive root would have to be allowed, and its unfiltered files with it.

A snapshot is kept while it is one of the newest `snapshot_keep` (default 2: the current one and the
one a reader may have opened just before the switch), and after that as long as an `engram sql`
reader holds its `readers.lock` (shared flock). The duckdb CLI takes no such lock: a shell left
open on a snapshot works until the next-but-one publish (a day of nightly runs).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engram import clock
from engram.errors import EngramError, InvalidInput, StoreMissing
from engram.store import db
from engram.store.durable import fsync_dir
from engram.store.presence import missing_store_error

log = logging.getLogger(__name__)

POINTER = "current"
ARCHIVE = "archive"
VIEWS_FILE = "snapshot.duckdb"
READERS_LOCK = "readers.lock"
# directory in the snapshot -> (the named query that fills it, its params); one parquet file per shard
EXPORTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "facts": ("snapshot/export_facts", ("user_id", "include_private", "now", "decay_rate")),
    "fact_sources": ("snapshot/export_fact_sources", ("user_id", "include_private")),
    "fact_history": ("snapshot/export_fact_history", ("user_id", "include_private")),
    "episodes": ("snapshot/export_episodes", ("user_id", "include_private")),
    "runs": ("snapshot/export_runs", ("user_id",)),
    "llm_reviews": ("snapshot/export_llm_reviews", ("user_id", "include_private")),
    "archive_manifest": ("snapshot/export_archive_exports", ("user_id",)),
    "archive_restored": ("snapshot/export_archive_restored", ("user_id",)),
}
STUBS: dict[str, str] = {t: f"snapshot/archive_stub_{t}" for t in ("facts", "episodes", "fact_sources")}
_SIZE = re.compile(r"(\d{1,9}(?:\.\d{1,6})?)\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)
_UNITS = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
TEMP_PER_MEMORY = 2  # spill room on disk per byte of sql_memory_limit: a big sort spills, the disk does not fill
STALE_TMP_S = 3600.0  # a half-written snapshot older than this was left by a crashed publish


class NoSnapshot(EngramError):
    """No read snapshot has been published yet."""

    code = "no_snapshot"


@dataclass(frozen=True)
class Published:
    """What publish_snapshot wrote."""

    snapshot_id: str
    path: Path
    rows: dict[str, int]
    removed: list[str]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"snapshot_id": self.snapshot_id, "path": str(self.path), "rows": self.rows,
                "removed": self.removed, "seconds": self.seconds}


def snapshot_root(settings: Any) -> Path:
    """Where snapshots live: ENGRAM_SNAPSHOT_DIR, else `snapshots/` beside the store."""
    return Path(settings.snapshot_dir) if settings.snapshot_dir else Path(settings.db_path).parent / "snapshots"


def current_snapshot(settings: Any) -> Path | None:
    """The directory of the latest published snapshot, or None."""
    root = snapshot_root(settings)
    try:
        name = (root / POINTER).read_text().strip()
    except FileNotFoundError:
        return None
    path = root / name
    return path if name and (path / VIEWS_FILE).is_file() else None


def publish_snapshot(settings: Any, run_id: str | None = None, now: datetime | None = None) -> Published:
    """Export the analyst views of every store file to a new snapshot, switch `current` to it, prune."""
    from engram.store.sharding import all_shard_settings

    started = time.monotonic()
    now = now or clock.now()
    shards = all_shard_settings(settings, existing_only=True)
    if not any(Path(s.db_path).is_file() for s in shards):  # removed: an empty snapshot would hide every memory
        raise missing_store_error(settings.db_path)
    root = snapshot_root(settings)
    root.mkdir(parents=True, exist_ok=True)
    snapshot_id = f"snap-{now:%Y%m%dT%H%M%S%f}-{os.getpid()}"
    tmp = root / f".tmp-{snapshot_id}"
    tmp.mkdir()
    try:
        rows = {name: 0 for name in EXPORTS}
        values = {"user_id": None, "include_private": settings.snapshot_include_private, "now": now,
                  "decay_rate": settings.decay_rate}  # user_id None: every tenant of the store file
        for k, shard in enumerate(shards):
            with db.open_reader(shard) as con:  # read-only (or the database this process holds open)
                for name, (query, names) in EXPORTS.items():
                    batches = db.query_batches(con, query, **{n: values[n] for n in names})
                    rows[name] += _write_parquet(batches, tmp / name / f"shard-{k}.parquet")
                if k == 0:
                    for table, query in STUBS.items():
                        _write_parquet(db.query_batches(con, query, user_id=""), tmp / "archive_stub" / f"{table}.parquet")
        archive = Path(settings.archive_dir).resolve()
        mirror_archive(archive, tmp / ARCHIVE, settings.snapshot_include_private)
        (tmp / READERS_LOCK).touch()
        with db.connect(tmp / VIEWS_FILE) as vcon:
            db.execute(vcon, "snapshot/search_path", dir=str(tmp.resolve()))
            db.execute(vcon, "snapshot/create_info")
            db.execute(vcon, "snapshot/insert_info", snapshot_id=snapshot_id, created_at=now, run_id=run_id,
                       store=str(Path(settings.db_path).resolve()), archive_dir=str(archive),
                       include_private=settings.snapshot_include_private, shards=len(shards))
            vcon.execute(db.sql("snapshot/views"))  # DDL only, no params: relative paths, bound in tmp
        final = root / snapshot_id
        tmp.rename(final)
        _switch(root, snapshot_id)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    removed = prune(settings)
    seconds = round(time.monotonic() - started, 3)
    log.info("published snapshot %s: %d rows in %.3f s, %d old snapshot(s) removed", snapshot_id,
             sum(rows.values()), seconds, len(removed))
    return Published(snapshot_id, final, rows, removed, seconds)


def _write_parquet(reader: Any, path: Path) -> int:
    """Stream record batches into one zstd parquet file (written even when empty: the views need it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with pq.ParquetWriter(path, reader.schema, compression="zstd") as writer:
        for batch in reader:
            writer.write_batch(batch)
            n += batch.num_rows
    return n


PRIVATE_COLUMN = "is_private"
MIRROR_BATCH_ROWS = 10_000  # rows per batch of a filtered copy: bounded memory with 384-d embeddings
Keep = Callable[[pa.RecordBatch], pa.Array]  # a batch's rows to keep (boolean mask)


def mirror_archive(archive: Path, target: Path, include_private: bool) -> dict[str, int]:
    """Give a snapshot its own `archive/`: every archive parquet file at the same relative path, its private
    rows (and the fact_sources rows of private facts) left out unless include_private.

    A file without such rows is hard-linked (copied when the archive is on another file system): no
    bytes are read beyond its footer. Returns how many files were linked and how many filtered.
    """
    target.mkdir()
    counts = {"linked": 0, "filtered": 0}
    private_facts: dict[str, set[str]] = {}  # tenant directory (user_id=...) -> ids of private archived facts
    for source in _archive_files(archive):
        rel = source.relative_to(archive)
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            keep = None if include_private else _private_filter(pq.ParquetFile(source), rel, private_facts)
            if keep is None:
                _link_or_copy(source, dest)
                counts["linked"] += 1
            else:
                _write_filtered(source, dest, keep)
                counts["filtered"] += 1
        except FileNotFoundError:  # set aside (renamed to *.abandoned) by an archive run meanwhile
            dest.unlink(missing_ok=True)
    log.info("snapshot archive: %d file(s) linked, %d filtered", counts["linked"], counts["filtered"])
    return counts


def _archive_files(archive: Path) -> list[Path]:
    """The archive's parquet files, facts first (their private ids filter the fact_sources files)."""
    if not archive.is_dir():
        return []
    files = (p for p in archive.glob("table=*/**/*.parquet") if p.is_file())
    return sorted(files, key=lambda p: (p.relative_to(archive).parts[0] != "table=facts", str(p)))


def _private_filter(parquet: pq.ParquetFile, rel: Path, private_facts: dict[str, set[str]]) -> Keep | None:
    """The mask of a file's rows a snapshot may show, or None when every row may be shown."""
    table, tenant = rel.parts[0], rel.parts[1] if len(rel.parts) > 2 else ""
    names = parquet.schema_arrow.names
    if PRIVATE_COLUMN in names:
        if not _may_hold_true(parquet, PRIVATE_COLUMN):
            return None
        if table == "table=facts":
            ids = private_facts.setdefault(tenant, set())
            for batch in parquet.iter_batches(MIRROR_BATCH_ROWS, columns=["id", PRIVATE_COLUMN]):
                ids.update(batch.column("id").filter(_is_private(batch)).to_pylist())
        return lambda batch: pc.invert(_is_private(batch))
    if table == "table=fact_sources" and private_facts.get(tenant) and "fact_id" in names:
        hidden = pa.array(sorted(private_facts[tenant]), pa.string())
        fact_ids = parquet.read(columns=["fact_id"]).column(0)
        if not pc.any(pc.is_in(fact_ids, value_set=hidden)).as_py():
            return None
        return lambda batch: pc.invert(pc.is_in(batch.column("fact_id"), value_set=hidden))
    return None


def _is_private(batch: pa.RecordBatch) -> pa.Array:
    """Whether each row is private (a missing flag counts as private)."""
    return pc.fill_null(batch.column(PRIVATE_COLUMN), True)


def _may_hold_true(parquet: pq.ParquetFile, column: str) -> bool:
    """Whether a boolean column may hold a true (or null) value, from the footer's statistics alone."""
    meta = parquet.metadata
    index = parquet.schema_arrow.get_field_index(column)
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if group.num_rows == 0:
            continue
        stats = group.column(index).statistics
        if stats is None or not stats.has_min_max or stats.max is not False or stats.null_count != 0:
            return True
    return False


def _link_or_copy(source: Path, dest: Path) -> None:
    """A hard link to an archive file (a writer that replaces the snapshot's name gets a new inode and
    leaves the archive's bytes alone), or a copy where linking is refused (another file system)."""
    try:
        os.link(source, dest)
    except FileNotFoundError:
        raise
    except OSError:
        shutil.copyfile(source, dest)


def _write_filtered(source: Path, dest: Path, keep: Keep) -> None:
    """Copy an archive file's rows that keep() allows, batch by batch, with the same schema."""
    parquet = pq.ParquetFile(source)
    with pq.ParquetWriter(dest, parquet.schema_arrow, compression="zstd") as writer:
        for batch in parquet.iter_batches(MIRROR_BATCH_ROWS):
            writer.write_batch(batch.filter(keep(batch)))


def _switch(root: Path, snapshot_id: str) -> None:
    """Point `current` at the snapshot: write a temporary file, fsync, rename over (atomic on POSIX)."""
    tmp = root / f".{POINTER}.{os.getpid()}"
    with open(tmp, "w") as fh:
        fh.write(snapshot_id + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / POINTER)
    fsync_dir(root)


def prune(settings: Any) -> list[str]:
    """Remove snapshots beyond the newest `snapshot_keep` that no `engram sql` reader holds; returns their names."""
    root = snapshot_root(settings)
    current = current_snapshot(settings)
    snaps = sorted((p for p in root.glob("snap-*") if p.is_dir()), key=lambda p: p.name, reverse=True)
    removed: list[str] = []
    for path in snaps[settings.snapshot_keep:]:
        if current is not None and path.name == current.name:
            continue
        if _remove_unless_read(path):
            removed.append(path.name)
    for tmp in root.glob(".tmp-snap-*"):
        if time.time() - tmp.stat().st_mtime > STALE_TMP_S:
            shutil.rmtree(tmp, ignore_errors=True)
    return removed


def _remove_unless_read(path: Path) -> bool:
    """Delete a snapshot directory unless a reader holds its lock (shared flock) right now."""
    try:
        fd = os.open(path / READERS_LOCK, os.O_RDWR)
    except FileNotFoundError:
        shutil.rmtree(path, ignore_errors=True)
        return True
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        shutil.rmtree(path, ignore_errors=True)  # still holding the lock: no reader can come in
        return True
    finally:
        os.close(fd)


@contextmanager
def hold_snapshot(settings: Any) -> Iterator[Path]:
    """The latest snapshot's directory, held (shared lock) against pruning until the block ends."""
    for _ in range(3):  # a publish may prune the snapshot between reading `current` and locking it
        path = current_snapshot(settings)
        if path is None:
            raise NoSnapshot(f"no read snapshot under {snapshot_root(settings)} yet: run `engram snapshot` "
                             "(the nightly run publishes one after each run)")
        try:
            fd = os.open(path / READERS_LOCK, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if not (path / VIEWS_FILE).is_file():
                continue
            yield path
            return
        finally:
            os.close(fd)  # closing the descriptor releases the flock
    raise NoSnapshot(f"the snapshot under {snapshot_root(settings)} kept changing while opening it; try again")


@contextmanager
def open_snapshot(settings: Any) -> Iterator[db.Connection]:
    """A read-only connection to the latest snapshot, held while open, for analysts' own SQL.

    External access is off and the configuration locked: only the snapshot's own files (its
    `archive/` included) can be read, nothing attached (the live store included), and memory and
    spill space are capped by sql_memory_limit. DuckDB checks a relative path against the process's working directory (while it reads
    it from file_search_path), so the views' relative paths are read with the snapshot's directory as
    the working directory for as long as the connection is open.
    """
    memory, temp = analyst_limits(settings)  # first: a malformed limit is refused before anything opens
    with hold_snapshot(settings) as path, _working_directory(path.resolve()) as here, \
            db.connect(here / VIEWS_FILE, read_only=True, lock_timeout_s=settings.lock_timeout_s) as con:
        check_layout(here)
        db.execute(con, "snapshot/search_path", dir=str(here))
        db.execute(con, "snapshot/allowed_directories", dirs=[f"{here}{os.sep}"])
        db.execute(con, "snapshot/memory_limit", limit=memory)
        db.execute(con, "snapshot/max_temp_directory_size", size=temp)
        con.execute(db.sql("snapshot/lock_down"))  # no params: two SET statements
        yield con


def check_layout(path: Path) -> None:
    """Refuse a snapshot published by an older engram, whose `archive` linked to the whole archive root
    (private rows included): NoSnapshot, saying how to publish a current one."""
    if (path / ARCHIVE).is_symlink():
        raise NoSnapshot(f"snapshot {path.name} was published by an older engram (its archive link shows private "
                         "archived rows): run `engram snapshot` to publish a current one")


def analyst_limits(settings: Any) -> tuple[str, str]:
    """DuckDB's memory_limit and max_temp_directory_size for analysts' SQL, from settings.sql_memory_limit.

    Checked strictly, since the duckdb shell gets them as SQL text; the disk a query may spill to is
    TEMP_PER_MEMORY times its memory. InvalidInput naming the setting when malformed.
    """
    text = str(settings.sql_memory_limit).strip()
    match = _SIZE.fullmatch(text)
    if match is None:
        raise InvalidInput(f"sql_memory_limit (ENGRAM_SQL_MEMORY_LIMIT): {text!r} is not a size such as 512MB, "
                           "2GB or 1.5GiB (a number and one of KB MB GB TB KiB MiB GiB TiB)")
    number, unit = match.groups()
    size = float(number) * _UNITS[unit.lower()]
    if size < _UNITS["mb"]:
        raise InvalidInput(f"sql_memory_limit (ENGRAM_SQL_MEMORY_LIMIT): {text!r} is below 1MB; no query fits in it")
    return f"{number}{unit}", f"{int(size * TEMP_PER_MEMORY)}B"


@contextmanager
def _working_directory(path: Path) -> Iterator[Path]:
    """Run the block with path as the process's working directory (restored after)."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(before)


def publish_after_run(settings: Any, run_id: str, dry_run: bool, results: dict[str, Any]) -> dict[str, Any]:
    """The nightly run's last step: publish a snapshot when the run wrote and every tenant succeeded.

    A failed tenant keeps the previous snapshot (what analysts see is always a finished run); a
    failure to publish is reported, never undoes the run (the store is already committed).
    """
    failed = sorted(t for t, r in results.items() if isinstance(r, dict) and isinstance(r.get("failed"), str))
    if dry_run:
        return {"skipped": "dry run"}
    if failed:
        return {"skipped": f"{len(failed)} tenant(s) failed; the previous snapshot stays current"}
    try:
        return publish_snapshot(settings, run_id=run_id).to_dict()
    except StoreMissing:  # the store was removed under the run: the run failed, not only its snapshot
        raise
    except Exception as exc:  # noqa: BLE001 - reported in the run's result and log; the next run retries
        from engram.store.runs import error_text

        log.error("publishing the read snapshot failed: %s", error_text(exc))
        return {"failed": error_text(exc)}
