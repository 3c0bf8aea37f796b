"""Ingestion: validate episode records, hash them, and append them in one transaction."""

from __future__ import annotations

import csv
import json
import logging
import math
import re
import threading
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from engram import clock
from engram.errors import InvalidInput, StoreError
from engram.settings import Settings
from engram.store import db, hot_path, inbox
from engram.store.csv_cells import csv_cells_up_to
from engram.store.limits import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_TAG_CHARS,
    MAX_TAGS,
)
from engram.store.insert import (
    EPISODE_SCHEMA,
    IngestRejected,
    IngestResult,
    RowError,
    distinct_records,
    insert_rows,
    record_key,
)
from engram.store.sharding import shard_of, shard_settings
from engram.store.tenant import normalise_user_id, user_id_problem
from engram.store.vectors import validate_vectors
from engram.text.normalize import content_hash, stable_id

_EPOCH = re.compile(r"[+-]?\d+(\.\d+)?")
log = logging.getLogger(__name__)

KINDS = {"turn", "thought", "event"}
ORIGINS = {"human", "tool", "model"}
VISIBILITIES = {"private", "project", "global"}
# characters that show nothing: content made of them alone is empty (format and bidi controls, combining
# marks, separators, and the filler letters some scripts define)
_INVISIBLE_CATEGORIES = {"Cf", "Mn", "Me", "Zs", "Zl", "Zp", "Cc"}
_FILLERS = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}
KNOWN_FIELDS = {
    "id", "user_id", "content", "created_at", "session_id", "role", "kind", "origin",
    "tags", "is_private", "visibility", "metadata", "is_summary", "summary_of", "pipeline",
}


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValueError("not a finite timestamp")
        try:
            dt = datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError):
            raise ValueError(f"timestamp {value} is out of range") from None
    elif isinstance(value, str) and _EPOCH.fullmatch(value.strip()):
        return _parse_time(float(value.strip()))  # CSV cells are text: epoch seconds as in JSON
    elif isinstance(value, str) and value.strip():
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    else:
        raise ValueError("expected an ISO-8601 timestamp")
    if dt.tzinfo is not None:
        try:
            dt = dt.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:
            raise ValueError(f"{value} is out of range in UTC (years 1 to 9999)") from None
    return dt


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "false", "1", "0", "yes", "no", ""}:
        return value.strip().lower() in {"true", "1", "yes"}
    raise ValueError("expected true or false")


def _parse_tags(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = json.loads(value) if value.lstrip().startswith("[") else value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise ValueError("expected a list of strings or a comma-separated string")
    return sorted({t.strip() for t in value if t.strip()})


def _parse_record_tags(value: Any) -> list[str]:
    """A record's tags, within MAX_TAGS tags of MAX_TAG_CHARS characters each."""
    if isinstance(value, (list, tuple)) and len(value) > 4 * MAX_TAGS:  # refused before sorting a huge list
        raise ValueError(f"more than {MAX_TAGS} tags")
    tags = _parse_tags(value)
    if len(tags) > MAX_TAGS:
        raise ValueError(f"more than {MAX_TAGS} tags ({len(tags)})")
    long = next((t for t in tags if len(t) > MAX_TAG_CHARS), None)
    if long is not None:
        raise ValueError(f"a tag is longer than {MAX_TAG_CHARS} characters ({len(long)})")
    return tags


def _too_deep(value: Any, limit: int) -> bool:
    """Whether lists and objects nest deeper than `limit` in value (iterative: any depth is safe)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (list, tuple, dict)))
    return False


def _visible(text: str) -> bool:
    """Whether text shows anything (not only zero-width, combining, bidi or space characters)."""
    return any(unicodedata.category(ch) not in _INVISIBLE_CATEGORIES and ch not in _FILLERS for ch in text)


def _optional_str(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    text = str(value)
    if len(text) > MAX_ID_CHARS:
        raise ValueError(f"longer than {MAX_ID_CHARS} characters")
    return text


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, (list, tuple)):
        return any(_has_surrogate(v) for v in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


def _choice(value: Any, allowed: set[str], default: str) -> str:
    if value is None or value == "":
        return default
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"expected one of {sorted(allowed)}, got {value!r}")
    return value


def validate_record(
    raw: Mapping[str, Any], now: datetime, default_user: str | None = None, require_created_at: bool = False
) -> dict[str, Any]:
    """Turn one raw record into a storable episode row; raises (field, reason) as ValueError args."""
    if isinstance(raw, Malformed):
        raise _FieldError("json", raw.reason)
    if not isinstance(raw, Mapping):
        raise _FieldError("record", f"expected an object, got {type(raw).__name__}")
    unknown = set(raw) - KNOWN_FIELDS
    if unknown:
        raise _FieldError(sorted(unknown)[0], "unknown field")
    row: dict[str, Any] = {}

    def check(name: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(raw.get(name), *args)
        except (ValueError, TypeError, OverflowError) as exc:
            raise _FieldError(name, str(exc)) from None
        except RecursionError:
            raise _FieldError(name, "nested too deeply") from None

    user_id = check("user_id", _optional_str, "user_id") or default_user
    if not user_id or not user_id.strip():
        raise _FieldError("user_id", "required and must not be empty")
    problem = user_id_problem(user_id)
    if problem:
        raise _FieldError("user_id", problem)
    user_id = normalise_user_id(user_id)
    for name, value in raw.items():  # before any walk of the values: a deep one would exhaust the stack
        if _too_deep(value, MAX_METADATA_DEPTH):
            raise _FieldError(name, f"nested deeper than {MAX_METADATA_DEPTH} levels")
    for name, value in raw.items():  # pyarrow and DuckDB cannot encode a lone surrogate: name the field
        if _has_surrogate(value):
            raise _FieldError(name, "contains a lone surrogate (not valid Unicode)")
    content = raw.get("content")
    if not isinstance(content, str):
        raise _FieldError("content", f"expected text, got {type(content).__name__}")
    if not content.strip() or not _visible(content):
        raise _FieldError("content", "empty text")  # nothing visible counts as empty
    if len(content) > MAX_CONTENT_CHARS:
        raise _FieldError("content", f"longer than {MAX_CONTENT_CHARS} characters")
    if "\x00" in content:
        raise _FieldError("content", "contains a NUL character")
    if raw.get("created_at") in (None, "") and require_created_at:
        # a file row stamped "now" would get a new id on every re-ingest, breaking idempotency
        raise _FieldError("created_at", "required in files (re-ingesting must add nothing)")
    created_at = check("created_at", _parse_time) if raw.get("created_at") not in (None, "") else now
    metadata = raw.get("metadata")
    if isinstance(metadata, str) and metadata:
        if len(metadata.encode("utf-8", "surrogatepass")) > MAX_METADATA_BYTES:
            raise _FieldError("metadata", f"larger than {MAX_METADATA_BYTES} bytes of JSON")
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            raise _FieldError("metadata", "not valid JSON") from None
        except RecursionError:
            raise _FieldError("metadata", f"nested deeper than {MAX_METADATA_DEPTH} levels") from None
        except ValueError as exc:  # an integer literal of thousands of digits
            raise _FieldError("metadata", f"unreadable JSON value: {str(exc).split(':')[0]}") from None
        if _too_deep(metadata, MAX_METADATA_DEPTH):
            raise _FieldError("metadata", f"nested deeper than {MAX_METADATA_DEPTH} levels")
    if metadata is not None and metadata != "" and not isinstance(metadata, dict):
        raise _FieldError("metadata", "expected an object")
    is_private = check("is_private", _parse_bool) if raw.get("is_private") is not None else False
    visibility = check("visibility", _choice, VISIBILITIES, "private" if is_private else "project")
    chash = content_hash(content)
    row.update(
        user_id=user_id,
        content=content,
        created_at=created_at,
        ingested_at=now,
        session_id=check("session_id", _optional_str, "session_id"),
        role=check("role", _optional_str, "role"),
        kind=check("kind", _choice, KINDS, "turn"),
        origin=check("origin", _choice, ORIGINS, "human"),
        visibility=visibility,
        is_private=is_private or visibility == "private",
        tags=check("tags", _parse_record_tags),
        content_hash=chash,
        is_summary=check("is_summary", _parse_bool) if raw.get("is_summary") is not None else False,
        summary_of=check("summary_of", _parse_tags) or None,
        pipeline=check("pipeline", _optional_str, "pipeline"),
        metadata=_metadata_json(metadata),
    )
    given_id = check("id", _optional_str, "id")
    row["id_given"] = given_id is not None
    row["id"] = given_id or episode_id(row)
    return row


def episode_id(row: Mapping[str, Any]) -> str:
    """The id of a record given without one: its natural key (tenant, session, role, time, content hash)."""
    return stable_id(
        "ep", row["user_id"], row["session_id"] or "", row["role"] or "", row["created_at"].isoformat(),
        row["content_hash"],
    )


class _IngestClock:
    """Hands out strictly increasing timestamps, so records without created_at keep their order.

    Process-wide on purpose: two add_episodes calls in the same microsecond must not stamp a
    user turn and its retry-free successor with the same time.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = datetime.min

    def stamps(self, n: int) -> list[datetime]:
        with self._lock:
            start = max(clock.now(), self._last + timedelta(microseconds=1))
            out = [start + timedelta(microseconds=i) for i in range(n)]
            if out:
                self._last = out[-1]
        return out


INGEST_CLOCK = _IngestClock()


def _metadata_json(metadata: dict[str, Any] | None) -> str | None:
    if not metadata:
        return None
    try:  # datetimes (parquet structs) become ISO text; NaN/inf are not JSON
        text = json.dumps(metadata, default=_iso, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _FieldError("metadata", f"not JSON-serialisable: {exc}") from None
    except RecursionError:
        raise _FieldError("metadata", f"nested deeper than {MAX_METADATA_DEPTH} levels") from None
    if len(text.encode("utf-8")) > MAX_METADATA_BYTES:
        raise _FieldError("metadata", f"larger than {MAX_METADATA_BYTES} bytes of JSON ({len(text)} characters)")
    return text


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


@dataclass(frozen=True)
class Malformed:
    """A source line that could not be parsed at all; validation reports it as a row error."""

    reason: str


class _FieldError(ValueError):
    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(field_name, reason)
        self.field_name = field_name
        self.reason = reason


def add_episodes(
    records: Iterable[Mapping[str, Any]],
    settings: Settings,
    *,
    skip_invalid: bool = False,
    user_id: str | None = None,
    embeddings: np.ndarray | None = None,
    embedding_model: str | None = None,
    con: db.Connection | None = None,
    line_numbers: list[int] | None = None,
    require_created_at: bool = False,
) -> IngestResult:
    """Validate and append episodes. All-or-nothing unless skip_invalid; duplicates are skipped.

    Precomputed `embeddings` (one row per record, the active dimension) make rows active at once.
    Rows without created_at are stamped now, unless require_created_at (file ingest) rejects them.
    """
    records = list(records)
    stamps = INGEST_CLOCK.stamps(len(records))
    result = IngestResult(received=len(records))
    good: list[dict[str, Any]] = []
    good_index: list[int] = []
    good_numbers: list[int] = []
    numbers = line_numbers or list(range(1, len(records) + 1))
    for i, (number, raw) in enumerate(zip(numbers, records, strict=True)):
        try:
            good.append(
                validate_record(raw, stamps[i], default_user=user_id, require_created_at=require_created_at)
            )
            good_index.append(i)
            good_numbers.append(number)
        except _FieldError as exc:
            result.invalid.append(RowError(number, exc.field_name, exc.reason))
    result.invalid.extend(_id_conflicts_in_batch(good, good_numbers))
    if result.invalid and not skip_invalid:
        raise IngestRejected(result.invalid)
    vectors = _check_embeddings(embeddings, len(records), settings, embedding_model)
    for pos, row in zip(good_index, good, strict=True):
        if vectors is None:
            row.update(embedding=None, embedding_model=None, embedding_dim=None, status="pending_embed")
        else:
            row.update(
                embedding=vectors[pos].tolist(), embedding_model=embedding_model,
                embedding_dim=vectors.shape[1], status="active",
            )
    bad_lines = {e.line for e in result.invalid}
    kept = [(n, r) for n, r in zip(good_numbers, good, strict=True) if n not in bad_lines]
    if vectors is None:
        _embed_on_write(settings, [r for _, r in kept])
    if con is not None:
        result.ids = insert_rows(con, kept, skip_invalid, result)
    elif hot_path.off_store(settings, len(kept)):  # the store is not opened: the worker folds the inbox soon
        result.ids = _queue(settings, kept, result)
    else:
        with db.open_store_if_free(settings) as own:
            if own is None:  # the night (or another writer) holds the store: never wait for it
                result.ids = _queue(settings, kept, result)
            else:
                result.ids = insert_rows(own, kept, skip_invalid, result, journal=settings)
    result.duplicates = len(result.ids) - result.inserted - result.queued
    return result


# The store sits below the embedders: engram.embed.models registers here, when this process loads a local
# model, how to find the loaded embedder for a write's settings (None: not loaded, or not local).
_write_embedder: Callable[[Settings], Any] | None = None


def embed_writes_with(find: Callable[[Settings], Any]) -> None:
    """Let small writes embed with the embedder `find` returns for their settings (settings.embed_on_write)."""
    global _write_embedder
    _write_embedder = find


def _embed_on_write(settings: Settings, rows: list[dict[str, Any]]) -> None:
    """Give a small write's rows their vectors when this process has a local model loaded (see
    settings.embed_on_write): a search right after the write then embeds only its query, where it
    would otherwise wait for these texts too. A model that fails leaves the rows to the queue: the
    write never fails for it."""
    if not rows or len(rows) > settings.embed_on_write:
        return
    embedder = _write_embedder(settings) if _write_embedder is not None else None
    if embedder is None:
        return
    try:
        vectors = validate_vectors(np.asarray(embedder.embed([r["content"] for r in rows]), np.float32),
                                   embedder.dim)
        if len(vectors) != len(rows):
            raise ValueError(f"{len(vectors)} vectors for {len(rows)} texts")
    except Exception as exc:  # noqa: BLE001 - the embedding queue embeds them instead
        log.warning("write: embedding %d episode(s) failed (%s); the embedding queue will", len(rows),
                    type(exc).__name__)
        return
    for row, vec in zip(rows, vectors, strict=True):
        row.update(embedding=vec.tolist(), embedding_model=embedder.model, embedding_dim=embedder.dim,
                   status="active")


def _id_conflicts_in_batch(rows: list[dict[str, Any]], numbers: list[int]) -> list[RowError]:
    """Rows that reuse an explicit id of an earlier row of the batch for different content."""
    first: dict[tuple, str] = {}
    errors: list[RowError] = []
    for number, row in zip(numbers, rows, strict=True):
        if not row["id_given"]:
            continue
        key = record_key(row)
        if first.setdefault(key, row["content_hash"]) != row["content_hash"]:
            errors.append(RowError(number, "id", f"{row['id']!r} is given twice with different content"))
    return errors


def _check_embeddings(
    embeddings: np.ndarray | None, n: int, settings: Settings, model: str | None
) -> np.ndarray | None:
    if embeddings is None:
        return None
    if not model:
        raise InvalidInput("embedding_model: required when embeddings are given")
    arr = validate_vectors(embeddings, settings.embed_dim)
    if arr.shape[0] != n:
        raise InvalidInput(f"embedding: {arr.shape[0]} vectors for {n} records")
    return arr


def _queue(settings: Settings, numbered: list[tuple[int, dict[str, Any]]], result: IngestResult) -> list[str]:
    """Append the batch's distinct records to the inbox (one segment per tenant); return each record's id.

    The rules within the batch are applied now; what needs the store (a repeat of a stored record, an
    explicit id stored for other content) is applied when the segment is folded (engram.store.fold):
    by the embedding worker, `engram embed` or the night's first stage, never by another writer (a
    write costs one segment, whatever is waiting).
    """
    unique, keys = distinct_records(numbered)
    by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in unique.values():
        by_user[row["user_id"]].append(row)
    written: list[inbox.Segment] = []
    try:
        for user, rows in sorted(by_user.items()):
            written.append(inbox.write_segment(settings, user, pa.Table.from_pylist(rows, schema=EPISODE_SCHEMA)))
    except (OSError, StoreError) as exc:
        # not acknowledged: the tenants' segments already written go too, so the batch is all or nothing
        for seg in written:
            seg.path.unlink(missing_ok=True)
        if isinstance(exc, StoreError):
            raise
        raise StoreError(f"inbox: cannot write to {inbox.root(settings)}: {exc}; nothing was queued") from exc
    result.queued = len(unique)
    log.info("%d record(s) queued in the inbox", len(unique))
    return [unique[key]["id"] for key in keys]


def read_records(path: Path, fmt: str | None = None) -> tuple[list[int], list[Any]]:
    """Read episode records from JSONL, CSV or parquet, with the line (or row) number of each.

    A malformed JSONL line becomes a `Malformed` record, reported by validation like any bad row.
    """
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if path.is_dir():
        raise InvalidInput(f"file: {path} is a directory; give one JSONL, CSV or parquet file")
    if not path.is_file():
        raise InvalidInput(f"file: not found: {path}")
    if fmt in {"jsonl", "ndjson", "json"}:
        return _read_jsonl(path)
    if fmt == "csv":
        try:
            with csv_cells_up_to(), path.open(newline="", encoding="utf-8-sig") as fh:
                reader = csv.DictReader(fh)
                rows_ = [{k: v for k, v in row.items() if v != ""} for row in reader]
        except (UnicodeDecodeError, csv.Error) as exc:
            raise InvalidInput(f"file: not a readable CSV file: {exc}") from exc
        # line 1 is the header; a row with more cells than the header has a None key
        for row in rows_:
            if None in row:
                row["__extra_cells__"] = row.pop(None)
        return list(range(2, len(rows_) + 2)), rows_
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            rows_ = pq.read_table(path).to_pylist()
            return list(range(1, len(rows_) + 1)), rows_
        except pa.ArrowException as exc:
            raise InvalidInput(f"file: not a readable parquet file: {exc}") from exc
    raise InvalidInput(f"format: unsupported {fmt!r} (use jsonl, csv, parquet or locomo)")


def _read_jsonl(path: Path) -> tuple[list[int], list[Any]]:
    numbers: list[int] = []
    records: list[Any] = []
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"file: not UTF-8 text: {exc}") from exc
    # only "\n" ends a record (read_text already turned \r\n into \n); str.splitlines() would also
    # split inside JSON strings at U+2028, U+0085 and friends, which JSON allows unescaped
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        numbers.append(number)
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            records.append(Malformed(f"malformed JSON: {exc.msg} at column {exc.colno}"))
        except RecursionError:
            records.append(Malformed("JSON nested too deeply to read"))
        except ValueError as exc:  # an integer literal of thousands of digits
            records.append(Malformed(f"unreadable JSON value: {str(exc).split(':')[0]}"))
    return numbers, records


# ---------------------------------------------------------------- routed to shards


def add_episodes_routed(records: Iterable[Mapping[str, Any]], settings: Settings, **kwargs: Any) -> Any:
    """add_episodes, with each tenant's rows written to its own shard.

    Every row is validated before anything is written, so a rejected batch writes nothing on any
    shard. Precomputed `embeddings` are split with their rows.
    """
    from engram.store.ingest import (
        IngestRejected,
        IngestResult,
        RowError,
        add_episodes,
        validate_record,
    )

    if settings.shards == 1:
        return add_episodes(records, settings, **kwargs)
    if kwargs.get("con") is not None:
        raise InvalidInput("con: a sharded store opens each tenant's shard itself; pass no connection")
    records = list(records)
    numbers = kwargs.pop("line_numbers", None) or list(range(1, len(records) + 1))
    default_user = kwargs.get("user_id")
    now = clock.now()
    groups: dict[int, list[int]] = defaultdict(list)
    invalid: list[RowError] = []
    for i, raw in enumerate(records):
        try:
            row = validate_record(raw, now, default_user=default_user,
                                  require_created_at=kwargs.get("require_created_at", False))
        except ValueError as exc:  # ingest's field error: (field, reason)
            field, reason = (exc.args + ("?", "?"))[:2]
            invalid.append(RowError(numbers[i], str(field), str(reason)))
            continue
        groups[shard_of(row["user_id"], settings.shards)].append(i)
    if invalid and not kwargs.get("skip_invalid", False):
        raise IngestRejected(invalid)
    embeddings = kwargs.pop("embeddings", None)
    total = IngestResult(received=len(records), invalid=invalid)
    ids_by_line: dict[int, str] = {}
    for k in sorted(groups):
        idx = groups[k]
        part = add_episodes(
            [records[i] for i in idx], shard_settings(settings, k), line_numbers=[numbers[i] for i in idx],
            embeddings=None if embeddings is None else embeddings[idx], **kwargs,
        )
        total.inserted += part.inserted
        total.queued += part.queued
        total.duplicates += part.duplicates
        total.invalid.extend(part.invalid)
        rejected = {e.line for e in part.invalid}
        ids_by_line.update(zip([numbers[i] for i in idx if numbers[i] not in rejected], part.ids, strict=True))
    total.ids = [ids_by_line[n] for n in numbers if n in ids_by_line]  # the input's order
    log.info("ingest routed %d row(s) to %d shard(s)", len(records) - len(invalid), len(groups))
    return total
