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
    <tenant key>/quarantine/<name>                  a segment the fold could not read (truncated, damaged,
    <tenant key>/quarantine/<name>.reason.json      of another schema or tenant), moved aside with why and when
    <tenant key>/UNJOURNALED                        a direct write stored rows it could not journal here: the
                                                    embedding worker publishes the tenant at its next pass

A segment is written under a temporary name, fsynced and renamed: a reader sees all of it or none, and a
segment that exists was acknowledged. Folding renames it; the rename is atomic too. A segment carries a
digest of its main columns in its schema metadata, so a bit flipped on disk is found when it is read.

No single bad file stops the store: a reader skips a segment it cannot read (it moves nothing), and the
fold quarantines it and goes on with the others (engram.store.inbox_notices tells the command). A tenant
folder whose USER file is gone gets it back from its segments' rows; one whose USER file is not a user_id
is skipped, named, until an operator removes that file.
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

import errno
import logging
import unicodedata

import numpy as np
import pyarrow as pa

from engram.errors import DiskFull, InboxCorrupt, StoreError
from engram.store import inbox_notices
from engram.store.durable import fsync_dir, write_then_rename
from engram.store.episode_schema import schema_problem
from engram.store.inbox_notices import Notice

log = logging.getLogger(__name__)

FOLDED = ".folded.arrow"
PENDING = ".arrow"
USER_FILE = "USER"
REJECTED = "rejected"
WITHDRAWN = ".withdrawn"
QUARANTINE = "quarantine"
UNJOURNALED = "UNJOURNALED"
TMP_PREFIX = ".tmp-"
DIGEST_KEY = b"engram.digest"
DIGESTED = ("id", "user_id", "content", "created_at", "visibility", "is_private", "metadata")
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
    """Write through a temporary name, fsync, rename into place and fsync the directory. A full disk is
    DiskFull naming the path, with the temporary file removed (nothing half-written is left)."""
    try:
        write_then_rename(path, write, path.parent / f"{TMP_PREFIX}{path.name}-{secrets.token_hex(4)}")
    except OSError as exc:
        if exc.errno in {errno.ENOSPC, errno.EDQUOT}:
            raise DiskFull(f"inbox: no space left to write {path} ({exc.strerror}); nothing was written") from exc
        raise
    fsync_dir(path.parent)


def _ensure_dir(path: Path) -> None:
    """mkdir -p, with a full disk as DiskFull naming the folder."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in {errno.ENOSPC, errno.EDQUOT}:
            raise DiskFull(f"inbox: no space left to create {path} ({exc.strerror})") from exc
        raise


def _ensure_tenant_dir(settings: Any, user_id: str) -> Path:
    path = tenant_dir(settings, user_id)
    if not (path / USER_FILE).exists():
        _ensure_dir(path)
        _write_durably(path / USER_FILE, lambda fh: fh.write(user_id.encode("utf-8")))
        fsync_dir(path.parent)
    return path


def write_segment(settings: Any, user_id: str, rows: pa.Table, folded: bool = False) -> Segment:
    """Append one tenant's validated episode rows as a new segment (durable when this returns)."""
    path = _ensure_tenant_dir(settings, user_id)
    stem = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
    target = path / (stem + (FOLDED if folded else PENDING))

    stamped = rows.replace_schema_metadata({**(rows.schema.metadata or {}), DIGEST_KEY: digest(rows).encode()})

    def write(fh: Any) -> None:
        with pa.ipc.new_file(fh, stamped.schema) as writer:
            writer.write_table(stamped)

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


def is_segment_name(name: str) -> bool:
    """Whether a file name is a segment's (pending or folded)."""
    return _STEM.match(name) is not None


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
    """The user_ids that have an inbox directory in this store's inbox.

    A folder whose USER file is gone gets it back from its segments' rows (each row names its tenant,
    checked against the folder's key); one that cannot be named (no segment says, or a USER file that is
    not its user_id) is left out, named in a warning and a notice (inbox_notices), never guessed."""
    out = []
    try:
        entries = list(os.scandir(root(settings)))
    except FileNotFoundError:
        return []
    for entry in entries:
        if not entry.is_dir() or entry.name.startswith("."):
            continue
        user, problem = _tenant_of(Path(entry.path))
        if user is not None:
            out.append(user)
        elif problem is not None:
            _warn_once(problem[0], "inbox: %s: %s", *problem)
            inbox_notices.add(Notice("tenant_dir", *problem))
    return sorted(out)


def tenant_problems(settings: Any) -> list[tuple[str, str]]:
    """(path, reason) of every tenant folder of this inbox that cannot be named (see tenants)."""
    try:
        entries = [Path(e.path) for e in os.scandir(root(settings)) if e.is_dir() and not e.name.startswith(".")]
    except FileNotFoundError:
        return []
    return sorted(p for folder in entries if (p := _tenant_of(folder)[1]) is not None)


def _tenant_of(folder: Path) -> tuple[str | None, tuple[str, str] | None]:
    """A tenant folder's user_id, or why it has none: (path, reason) to name."""
    user_file = folder / USER_FILE
    try:
        raw = user_file.read_bytes()
    except FileNotFoundError:
        return _rebuild_user_file(folder)
    except OSError as exc:
        return None, (str(user_file), f"cannot be read: {exc.strerror}")
    try:
        user = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, (str(user_file), "not a user_id (not UTF-8 text); remove it and the next fold rebuilds it "
                                      "from the segments")
    if (not user.strip() or any(unicodedata.category(c) in {"Cc", "Cs"} for c in user)
            or tenant_key(user) != folder.name):
        return None, (str(user_file), "not the user_id of this folder; remove it and the next fold rebuilds it "
                                      "from the segments")
    return user, None


def _rebuild_user_file(folder: Path) -> tuple[str | None, tuple[str, str] | None]:
    """The user_id a folder without USER file holds rows of, written back to USER (when the disk lets)."""
    names = sorted((n for n in _names(folder) if _STEM.match(n)), reverse=True)
    if not names:
        return None, None  # nothing acknowledged here: no tenant to name
    for name in names:
        try:
            users = set(load(folder / name).column("user_id").to_pylist())
        except (InboxCorrupt, OSError):
            continue
        if len(users) == 1:
            user = users.pop()
            try:
                _write_durably(folder / USER_FILE, lambda fh, u=user: fh.write(u.encode("utf-8")))
                log.warning("inbox: %s had no USER file; rebuilt from its segments", folder)
            except (OSError, StoreError):
                log.warning("inbox: %s has no USER file and it cannot be written back; read from its segments",
                            folder)
            return user, None
    return None, (str(folder), "no USER file and no readable segment names its tenant; its segments are kept: "
                               "write the tenant's user_id to USER")


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


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
            table = load(segment.path)
        except FileNotFoundError:  # folded meanwhile (renamed) or deleted by a publish
            other = segment.path.parent / (segment.stem + (PENDING if segment.folded else FOLDED))
            try:
                table = load(other)
            except FileNotFoundError:
                return None
        self.put(segment, table)
        return table


CACHE = _SegmentCache()


def read(segment: Segment) -> pa.Table | None:
    """A segment's rows (None when a publish deleted it since it was listed, or it cannot be read: a reader
    skips it, with one warning per file, and moves nothing; the fold quarantines it)."""
    try:
        return CACHE.read(segment)
    except InboxCorrupt as exc:
        _warn_once(str(segment.path), "inbox: skipped a segment that cannot be read: %s", exc)
        return None


def read_checked(segment: Segment) -> pa.Table | None:
    """A segment's rows (None when a publish deleted it since it was listed); InboxCorrupt naming the file
    when it cannot be read."""
    return CACHE.read(segment)


def load(path: Path) -> pa.Table:
    """Read a segment file and check it (Arrow structure, UTF-8, schema, digest, tenant); InboxCorrupt
    naming the file and why, FileNotFoundError when it is gone."""
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
        table.validate(full=True)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        reason = "empty file" if _size(path) == 0 else f"not a readable Arrow file: {type(exc).__name__}: {exc}"
        raise InboxCorrupt(f"inbox segment {path}: {reason[:300]}") from exc
    problem = schema_problem(table.schema) or _digest_problem(table) or _tenant_problem(table, path.parent.name)
    if problem:
        raise InboxCorrupt(f"inbox segment {path}: {problem}")
    return table


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def digest(table: pa.Table) -> str:
    """A digest of a segment's main columns (values, nulls and boundaries), kept in its schema metadata."""
    h = blake2b(digest_size=16)
    for name in DIGESTED:
        arr = table.column(name).combine_chunks()
        h.update(name.encode())
        h.update(np.asarray(arr.is_null().to_numpy(zero_copy_only=False), np.uint8).tobytes())
        if pa.types.is_string(arr.type):
            bufs = arr.buffers()
            offsets = np.frombuffer(bufs[1], np.int32)[arr.offset: arr.offset + len(arr) + 1] if bufs[1] is not None \
                else np.zeros(1, np.int32)
            h.update((offsets - offsets[0]).tobytes())
            if bufs[2] is not None and len(offsets) > 1:
                h.update(memoryview(bufs[2])[int(offsets[0]): int(offsets[-1])])
        else:
            h.update(arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).tobytes())
    return h.hexdigest()


def _digest_problem(table: pa.Table) -> str | None:
    kept = (table.schema.metadata or {}).get(DIGEST_KEY)
    if kept is None:  # written before segments carried a digest
        return None
    return None if kept.decode("ascii", "replace") == digest(table) else "damaged: its rows do not match their digest"


def _tenant_problem(table: pa.Table, key: str) -> str | None:
    users = set(table.column("user_id").to_pylist())
    if None in users or any(tenant_key(u) != key for u in users):
        return "holds rows of another tenant (or without user_id)"
    return None


_WARNED: set[str] = set()


def _warn_once(key: str, message: str, *args: Any) -> None:
    """Log a warning about a file once per process (a worker's passes do not repeat it)."""
    if key in _WARNED:
        return
    if len(_WARNED) > 10_000:
        _WARNED.clear()
    _WARNED.add(key)
    log.warning(message, *args)


def quarantine(segment: Segment, reason: str) -> Path:
    """Move a segment that cannot be read (and its vectors) to the tenant's quarantine folder, beside a
    `<name>.reason.json` saying why and when; returns where it went. Never deletes it."""
    folder = segment.path.parent / QUARANTINE
    _ensure_dir(folder)
    target = folder / segment.path.name
    note = {"file": segment.path.name, "reason": reason, "quarantined_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                        time.gmtime())}
    _write_durably(folder / f"{segment.path.name}.reason.json",
                   lambda fh: fh.write(json.dumps(note, indent=1).encode("utf-8")))
    os.rename(segment.path, target)
    for extra in segment.path.parent.glob(f"{segment.stem}.*.npy"):
        os.rename(extra, folder / extra.name)
    fsync_dir(segment.path.parent)
    fsync_dir(folder)
    log.warning("inbox: segment %s quarantined in %s: %s", segment.path.name, folder, reason)
    inbox_notices.add(Notice("quarantined", str(target), reason))
    return target


def quarantined(settings: Any) -> list[tuple[Path, dict[str, Any]]]:
    """Every quarantined segment of this store's inbox with its reason file's content."""
    out = []
    for reason_file in sorted(root(settings).glob(f"*/{QUARANTINE}/*.reason.json")):
        try:
            note = json.loads(reason_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            note = {"reason": "reason file unreadable"}
        out.append((reason_file.with_name(reason_file.name.removesuffix(".reason.json")), note))
    return out


def rejected_files(settings: Any) -> list[tuple[Path, int]]:
    """Every file of records a fold refused in this store's inbox, with its record count."""
    out = []
    for path in sorted(root(settings).glob(f"*/{REJECTED}/*.jsonl")):
        try:
            n = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
        except (OSError, ValueError):
            n = 0
        out.append((path, n))
    return out


def clean_temporaries(settings: Any, user_id: str, older_than_s: float) -> int:
    """Remove the temporary files (`.tmp-*`) of writers killed mid-write, older than `older_than_s`, from
    the tenant's folder and its rejected and quarantine folders; returns how many. A live writer's file
    is seconds old: never touched."""
    folder = tenant_dir(settings, user_id)
    cutoff = time.time() - older_than_s
    removed = 0
    for place in (folder, folder / REJECTED, folder / QUARANTINE):
        for tmp in place.glob(f"{TMP_PREFIX}*"):
            try:
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink()
                    removed += 1
            except OSError:  # removed by another cleaner meanwhile
                continue
    if removed:
        log.info("inbox: removed %d temporary file(s) of killed writers in %s", removed, folder)
    return removed


def mark_unjournaled(settings: Any, user_id: str) -> bool:
    """Record that a direct write stored rows of the tenant without journalling them here (the embedding
    worker then publishes the tenant); False when even that cannot be written."""
    try:
        path = tenant_dir(settings, user_id)
        _ensure_dir(path)
        (path / UNJOURNALED).touch()
        return True
    except (OSError, StoreError):
        return False


def unjournaled(settings: Any, user_id: str) -> bool:
    """Whether a direct write of the tenant stored rows the inbox's journal misses."""
    return (tenant_dir(settings, user_id) / UNJOURNALED).exists()


def clear_unjournaled(settings: Any, user_id: str) -> None:
    """Forget the mark once a publish that read the store after it covers the tenant."""
    (tenant_dir(settings, user_id) / UNJOURNALED).unlink(missing_ok=True)


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
    _ensure_dir(folder)
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
