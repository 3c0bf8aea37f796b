"""Search without the live store: the published generations plus the inbox (engram.store.inbox).

When another process holds the store (the night, the embedding worker folding), a reader answers from
what the last publish wrote and every episode written since: the inbox's segments, pending or folded,
each row once (a row the generation already holds is read there). Facts change only at night, so the
facts generation is current until the night publishes the tenant again.

When the reader has the store, the inbox rows it does not hold yet (segments written while it was
held, not folded since) join the store's rows (`pending_rows`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa

from engram.index.disk import IndexNotPublished, IndexUnusable, current, index_dir
from engram.index.generation import Generation
from engram.index.merged import PersistedTableIndex
from engram.index.vector_index import (
    FILLED,
    PendingFill,
    TableIndex,
    index_of_rows,
    resolved,
    wants_fill,
)
from engram.index.windows import in_windows, row_moments
from engram.store import db, inbox

# The columns of an episode row as the index queries return them (query_index_delta_episodes)
DELTA_COLUMNS = ("row_id", "id", "text", "session_id", "embedding", "role", "kind", "origin", "created_at",
                 "tags", "status", "visibility", "is_private", "pending_text")
SEARCH_COLUMNS = ("session_id", "role", "kind", "origin", "created_at", "tags", "status", "visibility",
                  "is_private")
SEARCHABLE = ("active", "pending_embed")


def inbox_rows(settings: Any, user_id: str, model: str, dim: int, pending_only: bool = False
               ) -> tuple[pa.Table, tuple]:
    """The tenant's inbox episodes (first copy of each id) as index rows, and the inbox's signature.

    A row has its vector when it was written with one of (model, dim) or the embedding worker kept
    one beside its segment; otherwise its text is pending (embedded on the fly by a search's fill).
    """
    segs, others = inbox.listing(settings, user_id)
    memo_key = (resolved(settings.db_path), user_id, model, dim, pending_only)
    listed = _LISTED_KEYS.get(memo_key)
    if listed is not None and listed[0] is segs and listed[1] is others:  # the same listing as last time
        keys = listed[2]
    else:
        suffix = inbox.vectors_suffix(model, dim)
        keys = tuple((seg.stem, seg.stem + suffix in others) for seg in segs if not (pending_only and seg.folded))
        _LISTED_KEYS[memo_key] = (segs, others, keys)
    rows = _APPENDED.rows(settings, user_id, model, dim, pending_only, keys, segs)
    if rows is None:
        return _empty(dim), ()
    gone, names = inbox.withdrawn(settings, user_id) if any(n.endswith(inbox.WITHDRAWN) for n in others) \
        else (set(), ())
    memo = _FINISHED.get(memo_key)
    if memo is not None and memo[0] is rows and memo[1] == names:  # nothing written or withdrawn since
        return memo[2]
    signature: list[Any] = list(rows.keys)
    table = rows.table
    ids = table["id"].to_pylist()
    signature.append(names)
    seen: set[str] = set(gone)
    keep = [not (i in seen or seen.add(i)) for i in ids]  # type: ignore[func-returns-value]
    if not all(keep):
        table = table.filter(pa.array(keep))
    # negative (no store rowid), rising with the write order: a fill embeds the newest pending rows first
    table = table.append_column("row_id", pa.array(np.arange(table.num_rows) - table.num_rows - 1, pa.int64()))
    result = table.select(list(DELTA_COLUMNS)), tuple(signature)
    _FINISHED[memo_key] = (rows, names, result)
    return result


# per tenant: the last inbox_rows answer, with the converted rows and withdrawals it was made from
_FINISHED: dict[tuple, tuple[Any, tuple, tuple[pa.Table, tuple]]] = {}
# per tenant: the last listing (inbox.listing returns the same objects while the folder is unchanged) and
# the (stem, has vectors) keys made from it
_LISTED_KEYS: dict[tuple, tuple[list, set, tuple]] = {}


def fill_ahead(settings: Any, user_id: str, model: str, dim: int, limit: int) -> list[str]:
    """The texts a search's fill would embed now: the newest `limit` inbox rows of the tenant without a
    vector, less those this process embedded already. A search embeds them with its query, in one run."""
    if limit <= 0:
        return []
    rows, _ = inbox_rows(settings, user_id, model, dim)
    if not rows.num_rows:
        return []
    texts = [t for t in rows["pending_text"].to_pylist()[::-1] if t is not None][:limit]
    return [t for t, v in zip(texts, FILLED.get(model, texts), strict=True) if v is None]


@dataclass(frozen=True)
class _Rows:
    """Converted rows of a run of segments: `keys` the (stem, has vectors) of the segments that gave rows."""

    listed: tuple   # (stem, has vectors) of every segment read, rows or not
    keys: tuple
    table: pa.Table


class _AppendedRows:
    """Per tenant, the inbox rows of the last listing: a new listing that extends it (segments are only
    appended, in write order) converts only its new segments, so a search after a write costs one
    segment, not the day's."""

    def __init__(self) -> None:
        self._held: dict[tuple, _Rows] = {}
        self._lock = threading.Lock()

    def rows(self, settings: Any, user_id: str, model: str, dim: int, pending_only: bool, listed: tuple,
             segments: list[inbox.Segment]) -> _Rows | None:
        """The rows of the listed segments (None when none has a searchable row)."""
        key = (resolved(settings.db_path), user_id, model, dim, pending_only)
        with self._lock:
            held = self._held.get(key)
        if held is not None and listed is held.listed:
            return held if held.keys else None
        start, parts, keys = 0, [], []
        if held is not None and listed[: len(held.listed)] == held.listed:
            if len(listed) == len(held.listed):
                return held if held.keys else None
            start, parts, keys = len(held.listed), [held.table], list(held.keys)
        by_stem = {seg.stem: seg for seg in segments} if start < len(listed) else {}
        for stem, has_vectors in listed[start:]:
            part = _segment_rows(by_stem[stem], model, dim, has_vectors)
            if part is not None and part.num_rows:
                keys.append((stem, has_vectors))  # folding changes no row: no rebuild
                parts.append(part)
        out = _Rows(listed, tuple(keys), pa.concat_tables(parts).combine_chunks() if parts else _empty(dim).drop(["row_id"]))
        with self._lock:
            self._held[key] = out
        return out if keys else None

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
        _FINISHED.clear()
        _LISTED_KEYS.clear()
        inbox.forget_listings()


_APPENDED = _AppendedRows()


_CONVERTED: dict[tuple, pa.Table] = {}
_CONVERTED_LOCK = threading.Lock()
MAX_CONVERTED = 8192


def _segment_rows(seg: inbox.Segment, model: str, dim: int, has_vectors: bool) -> pa.Table | None:
    """A segment's searchable rows as index rows, converted once per process (segments are immutable)."""
    key = (str(seg.path.parent / seg.stem), model, dim, has_vectors)
    with _CONVERTED_LOCK:
        held = _CONVERTED.get(key)
    if held is not None:
        return held
    raw = inbox.read(seg)
    if raw is None:
        return None
    vectors = inbox.read_vectors(seg, model, dim, raw.num_rows) if has_vectors else None
    rows = _as_index_rows(raw, model, dim, vectors) if raw.num_rows else _empty(dim).drop(["row_id"])
    searchable = np.isin(np.asarray(rows["status"].to_pylist(), dtype=object), SEARCHABLE)
    if not searchable.all():
        rows = rows.filter(pa.array(searchable))
    with _CONVERTED_LOCK:
        if len(_CONVERTED) >= MAX_CONVERTED:
            _CONVERTED.pop(next(iter(_CONVERTED)))
        _CONVERTED[key] = rows
    return rows


def _as_index_rows(raw: pa.Table, model: str, dim: int, vectors: np.ndarray | None) -> pa.Table:
    """A segment's episode rows with the index queries' columns (no row_id yet)."""
    n = raw.num_rows
    own = inbox.written_with_vectors(raw, model, dim)
    embedding = [e if ok else None for e, ok in zip(raw["embedding"].to_pylist(), own, strict=True)]
    if vectors is not None:
        embedding = [e if e is not None else vectors[i].tolist() for i, e in enumerate(embedding)]
    content = raw["content"].to_pylist()
    roles = raw["role"].to_pylist()
    return pa.table({
        "id": raw["id"],
        "text": pa.array([f"{r}: {c}" if r is not None else c for r, c in zip(roles, content, strict=True)]),
        "session_id": raw["session_id"],
        "embedding": pa.array(embedding, pa.list_(pa.float32())),
        "role": raw["role"], "kind": raw["kind"], "origin": raw["origin"], "created_at": raw["created_at"],
        "tags": raw["tags"], "status": raw["status"], "visibility": raw["visibility"],
        "is_private": raw["is_private"],
        "pending_text": pa.array([None if e is not None else c for e, c in zip(embedding, content, strict=True)],
                                 pa.string()),
    }) if n else _empty(dim).drop(["row_id"])


@lru_cache(maxsize=8)
def _empty(dim: int) -> pa.Table:
    """No inbox rows, in the inbox rows' schema (tables are immutable: one per dim serves every search)."""
    schema = pa.schema([("row_id", pa.int64()), ("id", pa.string()), ("text", pa.string()),
                        ("session_id", pa.string()), ("embedding", pa.list_(pa.float32())),
                        ("role", pa.string()), ("kind", pa.string()), ("origin", pa.string()),
                        ("created_at", pa.timestamp("us")), ("tags", pa.list_(pa.string())),
                        ("status", pa.string()), ("visibility", pa.string()), ("is_private", pa.bool_()),
                        ("pending_text", pa.string())])
    return schema.empty_table()


def pending_rows(con: db.Connection, settings: Any, user_id: str, model: str, dim: int
                 ) -> tuple[pa.Table, tuple]:
    """The tenant's inbox rows the store does not hold (segments not folded yet), for a reader that has
    the store; with the inbox's signature (empty when there are none)."""
    rows, signature = inbox_rows(settings, user_id, model, dim, pending_only=True)
    if not rows.num_rows:
        return rows, ()
    stored = {i for (i,) in db.rows(con, "queries/index/episode_ids_stored_of", user_id=user_id,
                                    ids=rows["id"].to_pylist())}
    if stored:
        rows = rows.filter(pa.array([i not in stored for i in rows["id"].to_pylist()]))
    return rows, signature


class RowsIndex(TableIndex):
    """An in-memory index of rows that carry their search columns (no generation, no store)."""

    columns: pa.Table

    def candidate_rows(self, rows: list[int]) -> list[dict[str, Any]]:
        out = []
        for r, row in zip(rows, self.columns.take(pa.array(rows, pa.int64())).to_pylist(), strict=True):
            row |= {"row_id": int(self.rowids[r]), "id": self.ids[r], "pos": int(r)}
            out.append(row)
        return out

    def dated_positions(self, windows: Any) -> np.ndarray:
        return np.flatnonzero(in_windows(self._moments(), windows))

    def dated_count(self, windows: Any) -> int:
        return int(in_windows(self._moments(), windows).sum())

    def dated_mask(self, rows: np.ndarray, windows: Any) -> np.ndarray:
        return in_windows(self._moments()[np.asarray(rows, np.int64)], windows)

    def _moments(self) -> np.ndarray:
        if getattr(self, "_row_moments", None) is None:
            self._row_moments = row_moments(self.columns, self.table)
        return self._row_moments


def rows_index(rows: pa.Table, table: str, dim: int, signature: tuple, key: tuple,
               fill: PendingFill | None) -> RowsIndex:
    """A RowsIndex of index rows (the DELTA_COLUMNS)."""
    base = index_of_rows(rows, table, dim, signature, key, fill)
    index = RowsIndex(**{f: getattr(base, f) for f in base.__dataclass_fields__ if not f.startswith("_")})
    index.columns = rows.select([c for c in SEARCH_COLUMNS if c in rows.column_names])
    return index


class PublishedCache:
    """Per process: each tenant's published-mode index, current while its generation and inbox are."""

    def __init__(self) -> None:
        self._indexes: dict[tuple, TableIndex] = {}
        self._gens: dict[tuple, tuple[str, Generation]] = {}
        self._lock = threading.Lock()

    def generation(self, settings: Any, table: str, user_id: str, model: str, dim: int) -> Generation | None:
        """The tenant's current generation of `table`, or None when none was published (or it is unusable)."""
        path = index_dir(settings, user_id, table, model, dim)
        key = (resolved(settings.db_path), user_id, table, model, dim)
        try:
            name = current(path)
        except IndexNotPublished:
            return None
        with self._lock:
            held = self._gens.get(key)
        if held is not None and held[0] == name:
            return held[1]
        try:
            gen = Generation(path / name, user_id, table, model, dim)
        except IndexUnusable:
            return None
        with self._lock:
            self._gens[key] = (name, gen)
        return gen

    def index(self, settings: Any, table: str, user_id: str, model: str, dim: int,
              fill: PendingFill | None = None) -> TableIndex:
        """The index a search of (tenant, table) uses while the store is held."""
        gen = self.generation(settings, table, user_id, model, dim)
        if table == "episodes":
            rows, inbox_sig = inbox_rows(settings, user_id, model, dim)
        else:
            rows, inbox_sig = _empty(dim), ()
        key = (resolved(settings.db_path), user_id, table, model, dim, "published")
        signature = (gen.path.name if gen is not None else None, inbox_sig)
        with self._lock:
            cached = self._indexes.get(key)
        if cached is not None and cached.signature == signature and not wants_fill(_delta(cached), fill):
            return cached
        if gen is not None and rows.num_rows:  # a row the generation holds is read there
            fresh = gen.positions_of(rows["id"].to_pylist()) < 0
            if not fresh.all():
                rows = rows.filter(pa.array(fresh))
        if gen is None:
            index: TableIndex = rows_index(rows, table, dim, signature, key, fill)
        else:
            delta = index_of_rows(rows, table, dim, signature, key, fill)
            columns = rows.select(list(gen.columns.column_names)) if rows.num_rows else \
                gen.columns.schema.empty_table()
            index = PersistedTableIndex(gen, delta, columns, signature, key)
        with self._lock:
            self._indexes[key] = index
        return index

    def facts_of_episodes(self, settings: Any, user_id: str, model: str, dim: int, episode_ids: list[str]
                          ) -> list[tuple]:
        """(episode_id, fact_id, status, valid_from, valid_to, claim_type) as queries/query/facts_of_episodes
        returns them, from the published facts generation."""
        gen = self.generation(settings, "facts", user_id, model, dim)
        if gen is None:
            return []
        links = gen.facts_of(episode_ids)
        if not links:
            return []
        pos = gen.positions_of([f for _, f in links])
        cols = gen.columns.take(pa.array(np.maximum(pos, 0))).select(
            ["status", "valid_from", "asserted_at", "valid_to", "claim_type"]).to_pylist()
        return [(e, f, c["status"], c["valid_from"] or c["asserted_at"], c["valid_to"], c["claim_type"])
                for (e, f), p, c in zip(links, pos, cols, strict=True) if p >= 0]

    def clear(self) -> None:
        with self._lock:
            self._indexes.clear()
            self._gens.clear()
        _APPENDED.clear()


def _delta(index: TableIndex) -> TableIndex:
    return index.delta if isinstance(index, PersistedTableIndex) else index


PUBLISHED = PublishedCache()
