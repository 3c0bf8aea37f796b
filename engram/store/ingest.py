"""Ingestion: validate episode records, hash them, and append them in one transaction."""

from __future__ import annotations

import csv
import json
import logging
import math
import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from engram import clock
from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store import db
from engram.store.sharding import shard_of, shard_settings
from engram.store.tenant import normalise_user_id, user_id_problem
from engram.store.vectors import validate_vectors
from engram.text.normalize import content_hash, stable_id

_EPOCH = re.compile(r"[+-]?\d+(\.\d+)?")
log = logging.getLogger(__name__)

KINDS = {"turn", "thought", "event"}
ORIGINS = {"human", "tool", "model"}
VISIBILITIES = {"private", "project", "global"}
MAX_CONTENT_CHARS = 1_000_000
MAX_ID_CHARS = 512
KNOWN_FIELDS = {
    "id", "user_id", "content", "created_at", "session_id", "role", "kind", "origin",
    "tags", "is_private", "visibility", "metadata", "is_summary", "summary_of", "pipeline",
}


@dataclass(frozen=True)
class RowError:
    """One rejected input row: its 1-based line (or row) number, the field and why."""

    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.reason}"


@dataclass
class IngestResult:
    """What an ingest did."""

    received: int = 0
    inserted: int = 0
    duplicates: int = 0
    invalid: list[RowError] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)


class IngestRejected(InvalidInput):
    """The whole batch was rejected; `errors` lists every bad row."""

    def __init__(self, errors: list[RowError]) -> None:
        self.errors = errors
        shown = "; ".join(str(e) for e in errors[:20])
        more = f" (and {len(errors) - 20} more)" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} invalid row(s), nothing ingested: {shown}{more}")

    @classmethod
    def summary(cls, errors: list[RowError], note: str = "") -> InvalidInput:
        """The one-line count for a caller that already printed every row error."""
        return InvalidInput(f"{len(errors)} invalid row(s), nothing ingested{note}")


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
        dt = dt.astimezone(UTC).replace(tzinfo=None)
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
        except (ValueError, TypeError) as exc:
            raise _FieldError(name, str(exc)) from None

    user_id = check("user_id", _optional_str, "user_id") or default_user
    if not user_id or not user_id.strip():
        raise _FieldError("user_id", "required and must not be empty")
    problem = user_id_problem(user_id)
    if problem:
        raise _FieldError("user_id", problem)
    user_id = normalise_user_id(user_id)
    for name, value in raw.items():  # pyarrow and DuckDB cannot encode a lone surrogate: name the field
        if _has_surrogate(value):
            raise _FieldError(name, "contains a lone surrogate (not valid Unicode)")
    content = raw.get("content")
    if not isinstance(content, str):
        raise _FieldError("content", f"expected text, got {type(content).__name__}")
    if not content.strip():
        raise _FieldError("content", "empty text")
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
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            raise _FieldError("metadata", "not valid JSON") from None
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
        tags=check("tags", _parse_tags),
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


def natural_key(row: Mapping[str, Any]) -> tuple:
    """The record's session, role, time and content: a record given twice without an id is a retry."""
    return (row["user_id"], row["session_id"], row["role"], row["created_at"], row["content_hash"])


def record_key(row: Mapping[str, Any]) -> tuple:
    """What makes two records the same record: the explicit id, else the natural key."""
    return (row["user_id"], "id", row["id"]) if row["id_given"] else natural_key(row)


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
        return json.dumps(metadata, default=_iso, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _FieldError("metadata", f"not JSON-serialisable: {exc}") from None


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


EPISODE_SCHEMA = pa.schema(
    [
        ("id", pa.string()), ("user_id", pa.string()), ("kind", pa.string()), ("role", pa.string()),
        ("session_id", pa.string()), ("content", pa.string()), ("created_at", pa.timestamp("us")),
        ("ingested_at", pa.timestamp("us")), ("origin", pa.string()), ("visibility", pa.string()),
        ("is_private", pa.bool_()), ("tags", pa.list_(pa.string())), ("content_hash", pa.string()),
        ("embedding", pa.list_(pa.float32())), ("embedding_model", pa.string()),
        ("embedding_dim", pa.int32()), ("status", pa.string()), ("is_summary", pa.bool_()),
        ("summary_of", pa.list_(pa.string())), ("pipeline", pa.string()), ("metadata", pa.string()),
        ("id_given", pa.bool_()),
    ]
)


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
    if con is None:
        with db.open_store(settings) as own:
            result.ids = _insert(own, kept, skip_invalid, result)
    else:
        result.ids = _insert(con, kept, skip_invalid, result)
    result.duplicates = len(result.ids) - result.inserted
    return result


def _stored_ids_sharing_a_natural_key(con: db.Connection, rows: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(user_id, id) already stored, of the explicit ids whose natural key a record without id shares."""
    without_id = {natural_key(r) for r in rows if not r["id_given"]}
    probe = sorted({r["id"] for r in rows if r["id_given"] and natural_key(r) in without_id})
    return {(u, i) for u, i in db.rows(con, "queries/store/episode_ids_stored", ids=probe)} if probe else set()


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


def _insert(
    con: db.Connection, numbered: list[tuple[int, dict[str, Any]]], skip_invalid: bool, result: IngestResult
) -> list[str]:
    """Append the batch's distinct records in one transaction; return each record's stored id.

    A record without an id repeats an earlier one (in the batch or the store) with the same natural
    key. A record whose explicit id is already stored for other content is a row error (the batch
    is rejected unless skip_invalid, then that row is skipped and gets no id).
    """
    unique: dict[tuple, dict[str, Any]] = {}
    by_natural: dict[tuple, tuple] = {}
    keys: list[tuple] = []
    stored = _stored_ids_sharing_a_natural_key(con, [row for _, row in numbered])
    for _, row in numbered:
        key = record_key(row)
        if not row["id_given"]:
            key = by_natural.get(key, key)
        kept = unique.setdefault(key, row)
        # A record without id repeats the record kept under an id, not a discarded retry of it that
        # named another session or role; and an id already stored keeps its stored natural key.
        if not (kept["id_given"] and (kept["user_id"], kept["id"]) in stored):
            by_natural.setdefault(natural_key(kept), key)
        keys.append(key)
    table = pa.Table.from_pylist(list(unique.values()), schema=EPISODE_SCHEMA)
    # registered outside the transaction: unregistering inside an aborted one would mask the error
    with db.registered(con, "incoming_episodes", table), db.transaction(con):
        conflicts = {i for (i,) in db.rows(con, "queries/store/episode_id_conflicts")}
        if conflicts:
            errors = [RowError(n, "id", f"{r['id']!r} is already stored with different content")
                      for n, r in numbered if r["id_given"] and r["id"] in conflicts]
            if not skip_invalid:
                raise IngestRejected(errors)
            result.invalid.extend(errors)
        before = db.rows(con, "queries/store/count_episodes")[0][0]
        db.execute(con, "queries/store/insert_episodes")
        after = db.rows(con, "queries/store/count_episodes")[0][0]
        renamed = dict(db.rows(con, "queries/store/episode_ids_stored_under_other_id"))
    result.inserted = after - before
    ids: list[str] = []
    for key in keys:
        row = unique[key]
        if not (row["id_given"] and row["id"] in conflicts):
            ids.append(renamed.get(row["id"], row["id"]))
    return ids


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
            with path.open(newline="", encoding="utf-8-sig") as fh:
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
        total.duplicates += part.duplicates
        total.invalid.extend(part.invalid)
        rejected = {e.line for e in part.invalid}
        ids_by_line.update(zip([numbers[i] for i in idx if numbers[i] not in rejected], part.ids, strict=True))
    total.ids = [ids_by_line[n] for n in numbers if n in ids_by_line]  # the input's order
    log.info("ingest routed %d row(s) to %d shard(s)", len(records) - len(invalid), len(groups))
    return total
