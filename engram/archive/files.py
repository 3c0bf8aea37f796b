"""Archive files on disk: hive-style paths, write-once parquet, read-back verification, json manifest."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engram.archive.hashing import ALGORITHM, RowHasher
from engram.errors import InvalidInput
from engram.store.durable import fsync_dir

BATCH_ROWS = 50_000  # rows per Arrow batch and parquet row group: bounded memory with 384-d embeddings
COMPRESSION = "zstd"
MANIFEST_DIR = "_manifest"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_run_id(run_id: str) -> str:
    """A run id safe to put in a file name, else InvalidInput naming the field."""
    if not _RUN_ID.match(run_id or ""):
        raise InvalidInput(f"run_id: {run_id!r} must be 1-128 characters of letters, digits, '.', '_' or '-'")
    return run_id


def partition_dir(table: str, user_id: str, day: date) -> str:
    """The hive-style directory of a table, tenant and archive date, relative to archive_dir."""
    return f"table={table}/user_id={user_dir(user_id)}/date={day.isoformat()}"


MAX_USER_DIR = 128  # bytes of a path's user_id value; a file system allows 255 per name


def user_dir(user_id: str) -> str:
    """The user_id value of a hive path: the percent-quoted id, or for a longer one a capped, hashed name.

    A long id keeps its first quoted characters (never half an escape) plus '~' and 32 hex digits of
    the sha256 of the id, so any valid user_id gives a legal, distinct directory; the real id stays in
    every row of the file and in the manifest (`archive_exports.user_id`, `path`, and the json entry).
    """
    quoted = quote(user_id, safe="")
    if len(quoted) <= MAX_USER_DIR:
        return quoted  # unchanged: existing archives and short ids keep their paths
    head = quoted[:64]
    cut = head.rfind("%", len(head) - 2)
    head = head[:cut] if cut >= 0 else head
    return f"{head}~{hashlib.sha256(user_id.encode()).hexdigest()[:32]}"


@dataclass(frozen=True)
class Written:
    """What was written to one archive file, measured while writing."""

    rows: int
    content_hash: str
    file_sha256: str
    file_bytes: int


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def write_once(final: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> Written:
    """Write batches to a new parquet file (zstd), durably, without ever replacing an existing file.

    The rows go to a hidden temporary file first, which is fsynced and then hard-linked to the final
    name: the link fails if the name exists, so an archive file is never overwritten, and a crash
    leaves either no final file or a complete one.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        raise FileExistsError(f"archive file exists, refusing to overwrite: {final}")
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    hasher = RowHasher()
    try:
        with pq.ParquetWriter(tmp, schema, compression=COMPRESSION) as writer:
            for batch in batches:
                if batch.num_rows:
                    writer.write_batch(batch, row_group_size=BATCH_ROWS)
                    hasher.update(batch)
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        os.link(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(final.parent)
    return Written(hasher.rows, hasher.hexdigest(), file_sha256(final), final.stat().st_size)


def read_batches(path: Path, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of an archive file, batch by batch."""
    yield from pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS, columns=columns)


def verify(path: Path, rows: int | None, content_hash: str | None, sha256: str | None = None,
           size: int | None = None, decode: bool = True) -> list[str]:
    """Problems found reading a file back against what the manifest expects (empty = verified).

    decode=False checks only the size and sha256 of the bytes: enough when the manifest's sha256 was
    taken from a file whose rows were verified (identical bytes decode to identical rows).
    """
    if not path.is_file():
        return [f"{path}: file missing"]
    problems: list[str] = []
    if size is not None and path.stat().st_size != size:
        problems.append(f"{path}: {path.stat().st_size} bytes, manifest says {size}")
    if sha256 is not None and file_sha256(path) != sha256:
        problems.append(f"{path}: file sha256 differs from the manifest")
    if not decode:
        return problems
    hasher = RowHasher()
    try:
        for batch in read_batches(path):
            hasher.update(batch)
    except (OSError, pa.ArrowException, ValueError) as exc:
        return [*problems, f"{path}: unreadable parquet ({type(exc).__name__}: {exc})"]
    if rows is not None and hasher.rows != rows:
        problems.append(f"{path}: {hasher.rows} rows read back, manifest says {rows}")
    if content_hash is not None and hasher.hexdigest() != content_hash:
        problems.append(f"{path}: content hash read back differs from the manifest")
    return problems


def read_columns(path: Path, columns: list[str]) -> pa.Table:
    """Some columns of an archive file."""
    return pq.read_table(path, columns=columns)


def read_matching(path: Path, column: str, values: list[str]) -> pa.Table:
    """The rows of an archive file whose `column` is in `values`, decoding only the row groups holding them."""
    parquet = pq.ParquetFile(path)
    wanted = pa.array(values, pa.string())
    groups = [
        i for i in range(parquet.num_row_groups)
        if pc.any(pc.is_in(parquet.read_row_group(i, columns=[column]).column(0), value_set=wanted)).as_py()
    ]
    parts = []
    for i in groups:  # one decoded row group in memory at a time
        part = parquet.read_row_group(i)
        parts.append(part.filter(pc.is_in(part[column], value_set=wanted)))
    return pa.concat_tables(parts) if parts else parquet.schema_arrow.empty_table()


def set_aside(archive_dir: Path, rel_path: str, suffix: str = "abandoned") -> str:
    """Rename a file out of the `*.parquet` glob (never deleting it); returns the new relative path."""
    source = archive_dir / rel_path
    if not source.exists():
        return rel_path
    n = 0
    while True:
        target = source.with_name(f"{source.name}.{suffix}" + (f"-{n}" if n else ""))
        try:
            os.link(source, target)  # fails if the target exists: nothing is overwritten
        except FileExistsError:
            n += 1
            continue
        source.unlink()
        return str(target.relative_to(archive_dir))


def write_manifest_entry(archive_dir: Path, entry: dict[str, Any]) -> Path:
    """Write one export's manifest entry as json under archive_dir/_manifest (once; never replaced)."""
    folder = archive_dir / MANIFEST_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{entry['export_id']}.json"
    body = json.dumps({**entry, "hash_algorithm": ALGORITHM, "compression": COMPRESSION}, default=str, indent=2)
    if path.is_file() and path.stat().st_size > 0:
        return path  # a re-verified export keeps its first entry
    # written whole to a temporary name, then linked: a full disk never leaves an empty entry behind
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(body)
        try:
            os.link(tmp, path)  # exclusive: never replaces a complete entry
        except FileExistsError:
            if path.stat().st_size == 0:  # an empty entry left by an older version on a full disk
                os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
