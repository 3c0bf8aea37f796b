"""The inbox: episodes written while the live store is held, as immutable Arrow segments beside it.

DuckDB locks a file against every other process while one writes it, so an agent that adds a memory
during the night would wait for it. Instead a writer that finds the store held appends a segment here
and returns at once; the embedding worker and the night fold segments into the store (engram.store.fold).
A writer that gets the store inserts directly and journals the same rows as an already-folded segment,
so a reader that finds the store held (engram.index.published) still sees every row written since the
last publish. The publish that covers a folded segment deletes it. Like an LSM tree: the inbox is the
memtable and write-ahead log, the published indexes the sorted runs, the night the compaction.

Layout under `<db_path>.inbox/`:

    <tenant key>/USER                          the tenant's user_id
    <tenant key>/<stamp>-<pid>-<rand>.arrow         a segment the store does not hold yet
    <tenant key>/<stamp>-<pid>-<rand>.folded.arrow  a segment the store holds, kept until a publish covers it
    <tenant key>/<segment stem>.<model>-<dim>.npy    the segment's vectors, written by the embedding worker
    <tenant key>/<stamp>-<pid>-<rand>.withdrawn      ids marked for removal since: readers drop them
    <tenant key>/rejected/<stem>.jsonl              records a fold refused (an explicit id stored for other
                                                    content), with the reason: kept, never dropped

A segment is written under a temporary name, fsynced and renamed: a reader sees all of it or none, and a
segment that exists was acknowledged. Folding renames it; the rename is atomic too.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from engram.store.durable import fsync_dir

FOLDED = ".folded.arrow"
PENDING = ".arrow"
USER_FILE = "USER"
REJECTED = "rejected"
WITHDRAWN = ".withdrawn"
_STEM = re.compile(r"^(\d{20}-\d+-[0-9a-f]{8})(\.folded)?\.arrow$")


def root(settings: Any) -> Path:
    """The inbox of a store (one per shard file)."""
    return Path(f"{settings.db_path}.inbox")


def tenant_key(user_id: str) -> str:
    """The directory name of a tenant's segments (the index uses the same key)."""
    return blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest()


def tenant_dir(settings: Any, user_id: str) -> Path:
    """Where one tenant's segments live."""
    return root(settings) / tenant_key(user_id)


@dataclass(frozen=True)
class Segment:
    """One segment file: its path, stem (its name without the folded mark) and whether the store holds it."""

    path: Path
    stem: str
    folded: bool

    def vectors_path(self, model: str, dim: int) -> Path:
        """Where the embedding worker keeps this segment's vectors for (model, dim)."""
        return self.path.parent / (self.stem + vectors_suffix(model, dim))


def vectors_suffix(model: str, dim: int) -> str:
    """The end of a vectors file's name after its segment's stem, for (model, dim)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model)[:60]
    return f".{slug}-{dim}.npy"


def _write_durably(path: Path, write: Any) -> None:
    """Write through a temporary name, fsync, rename into place and fsync the directory."""
    tmp = path.parent / f".tmp-{path.name}-{secrets.token_hex(4)}"
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.rename(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _ensure_tenant_dir(settings: Any, user_id: str) -> Path:
    path = tenant_dir(settings, user_id)
    if not (path / USER_FILE).exists():
        path.mkdir(parents=True, exist_ok=True)
        _write_durably(path / USER_FILE, lambda fh: fh.write(user_id.encode("utf-8")))
        fsync_dir(path.parent)
    return path


def write_segment(settings: Any, user_id: str, rows: pa.Table, folded: bool = False) -> Segment:
    """Append one tenant's validated episode rows as a new segment (durable when this returns)."""
    path = _ensure_tenant_dir(settings, user_id)
    stem = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
    target = path / (stem + (FOLDED if folded else PENDING))

    def write(fh: Any) -> None:
        with pa.ipc.new_file(fh, rows.schema) as writer:
            writer.write_table(rows)

    _write_durably(target, write)
    segment = Segment(target, stem, folded)
    CACHE.put(segment, rows)  # this process's next search reads it from memory, not back from the file
    return segment


def segments(settings: Any, user_id: str) -> list[Segment]:
    """The tenant's segments, oldest first (pending and folded)."""
    return listing(settings, user_id)[0]


def listing(settings: Any, user_id: str) -> tuple[list[Segment], set[str]]:
    """The tenant's segments, oldest first, and the names of every other file beside them (vectors,
    withdrawals): one directory read. The same names as the last listing give the same lists back (the
    caller may compare them by identity); callers must not change them."""
    folder = tenant_dir(settings, user_id)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return [], set()
    key = str(folder)
    last = _LISTED.get(key)
    current = frozenset(names)
    if last is not None and last.names == current:
        return last.segments, last.others
    known = last.known if last is not None else {}
    if last is not None and last.names <= current:
        # files were only added (a write, a vectors file): the new segments come after the listed ones
        # unless a slower writer's older stem lands now; then the whole folder is sorted again
        added = sorted(current - last.names)
        new = [m for m in map(_STEM.match, added) if m]
        if not new or not last.segments or new[0].group(0) > last.segments[-1].path.name:
            segs = [_segment(folder, m) for m in new]
            known.update((seg.path.name, seg) for seg in segs)
            extended = _Listing(current, last.segments + segs, last.others | {n for n in added if not _STEM.match(n)},
                                known)
            _LISTED[key] = extended
            return extended.segments, extended.others
    out, others = [], set()
    for name in sorted(names):
        seg = known.get(name)
        if seg is None:
            m = _STEM.match(name)
            if not m:
                others.add(name)
                continue
            seg = known[name] = _segment(folder, m)
        out.append(seg)
    if len(known) > 2 * len(names) + 64:  # names gone from the folder (folded, published) are forgotten
        for name in set(known) - current:
            known.pop(name, None)
    _LISTED[key] = _Listing(current, out, others, known)
    return out, others


def _segment(folder: Path, name: re.Match[str]) -> Segment:
    """The Segment of a file name that matched _STEM."""
    return Segment(folder / name.group(0), name.group(1), name.group(2) is not None)


@dataclass
class _Listing:
    """The last listing of a tenant folder: its names, segments and other files, and the Segment of each
    file name seen (a listing of hundreds of segments builds no paths again)."""

    names: frozenset[str]
    segments: list[Segment]
    others: set[str]
    known: dict[str, Segment]


_LISTED: dict[str, _Listing] = {}


def forget_listings() -> None:
    """Forget every folder's last listing: the next one reads its folder from scratch."""
    _LISTED.clear()


def tenants(settings: Any) -> list[str]:
    """The user_ids that have an inbox directory in this store's inbox."""
    out = []
    try:
        entries = list(os.scandir(root(settings)))
    except FileNotFoundError:
        return []
    for entry in entries:
        try:
            out.append((Path(entry.path) / USER_FILE).read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return sorted(out)


class _SegmentCache:
    """Segments are immutable: each is read once per process (by stem, so folding does not re-read it)."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._tables: dict[str, pa.Table] = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def put(self, segment: Segment, table: pa.Table) -> None:
        """Keep a segment this process wrote (its rows are already in memory)."""
        with self._lock:
            if len(self._tables) >= self.max_entries:
                self._tables.pop(next(iter(self._tables)))
            self._tables[str(segment.path.parent / segment.stem)] = table

    def read(self, segment: Segment) -> pa.Table | None:
        key = str(segment.path.parent / segment.stem)
        with self._lock:
            table = self._tables.get(key)
        if table is not None:
            return table
        try:
            with pa.memory_map(str(segment.path)) as source:
                table = pa.ipc.open_file(source).read_all()
        except FileNotFoundError:  # folded meanwhile (renamed) or deleted by a publish
            other = segment.path.parent / (segment.stem + (PENDING if segment.folded else FOLDED))
            if not other.exists():
                return None
            with pa.memory_map(str(other)) as source:
                table = pa.ipc.open_file(source).read_all()
        self.put(segment, table)
        return table


CACHE = _SegmentCache()


def read(segment: Segment) -> pa.Table | None:
    """A segment's rows (None when a publish deleted it since it was listed)."""
    return CACHE.read(segment)


def mark_folded(segment: Segment) -> Segment:
    """Record that the store now holds the segment's rows (an atomic rename)."""
    target = segment.path.parent / (segment.stem + FOLDED)
    os.rename(segment.path, target)
    fsync_dir(segment.path.parent)
    return Segment(target, segment.stem, True)


def write_vectors(segment: Segment, model: str, dim: int, vectors: np.ndarray) -> None:
    """Keep the vectors of a segment's rows (row order) for readers and the fold."""
    _write_durably(segment.vectors_path(model, dim), lambda fh: np.save(fh, vectors.astype(np.float32)))


def written_with_vectors(rows: pa.Table, model: str, dim: int) -> list[bool]:
    """Per row of a segment, whether it was written with a vector of (model, dim) (given by the caller,
    or embedded by the writer: settings.embed_on_write)."""
    return [valid and m == model and d == dim
            for valid, m, d in zip(rows["embedding"].is_valid().to_pylist(), rows["embedding_model"].to_pylist(),
                                   rows["embedding_dim"].to_pylist(), strict=True)]


def read_vectors(segment: Segment, model: str, dim: int, rows: int) -> np.ndarray | None:
    """The segment's vectors for (model, dim), or None when the worker has not written them (or they do
    not fit the segment: written by another engram)."""
    try:
        vectors = np.load(segment.vectors_path(model, dim), allow_pickle=False)
    except (FileNotFoundError, ValueError, OSError):
        return None
    return vectors if vectors.shape == (rows, dim) and np.isfinite(vectors).all() else None


def write_rejected(segment: Segment, lines: list[str]) -> Path:
    """Keep the records a fold refused, one JSON object per line with its reason."""
    folder = segment.path.parent / REJECTED
    folder.mkdir(exist_ok=True)
    target = folder / f"{segment.stem}.jsonl"
    _write_durably(target, lambda fh: fh.write(("\n".join(lines) + "\n").encode("utf-8")))
    return target


def folded_stems(settings: Any, user_id: str) -> set[str]:
    """The stems of the tenant's folded segments and withdrawals (what a publish about to read the store covers)."""
    return {s.stem for s in segments(settings, user_id) if s.folded} | {
        p.stem for p in tenant_dir(settings, user_id).glob(f"*{WITHDRAWN}")}


def withdraw(settings: Any, user_id: str, ids: list[str]) -> None:
    """Record that these episodes left the searchable store (marked for removal): a reader of the inbox
    drops them until a publish covers the change."""
    if not ids or not tenant_dir(settings, user_id).exists():
        return
    stem = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
    path = tenant_dir(settings, user_id) / f"{stem}{WITHDRAWN}"
    _write_durably(path, lambda fh: fh.write(json.dumps(sorted(ids)).encode("utf-8")))


def withdrawn(settings: Any, user_id: str) -> tuple[set[str], tuple]:
    """The ids withdrawn from the tenant's inbox, and the names of the files that say so."""
    ids: set[str] = set()
    names = []
    for path in sorted(tenant_dir(settings, user_id).glob(f"*{WITHDRAWN}")):
        try:
            ids.update(json.loads(path.read_text(encoding="utf-8")))
            names.append(path.name)
        except (OSError, ValueError):  # removed by a publish meanwhile
            continue
    return ids, tuple(names)


def remove(settings: Any, user_id: str, stems: set[str]) -> int:
    """Delete the folded segments (and their vectors) named by `stems`, once a publish covers them."""
    removed = 0
    for seg in segments(settings, user_id):
        if seg.folded and seg.stem in stems:
            for extra in seg.path.parent.glob(f"{seg.stem}.*.npy"):
                extra.unlink(missing_ok=True)
            seg.path.unlink(missing_ok=True)
            removed += 1
    for path in tenant_dir(settings, user_id).glob(f"*{WITHDRAWN}"):
        if path.stem in stems:
            path.unlink(missing_ok=True)
    if removed:
        fsync_dir(tenant_dir(settings, user_id))
    return removed
