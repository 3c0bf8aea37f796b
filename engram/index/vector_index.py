"""In-memory search index per (store, tenant, table, model, dim), rebuilt when the store changes.

Vectors are served from a cached float32 matrix instead of being re-read from DuckDB per query;
above EXACT_LIMIT rows a 1-bit sign sketch pre-selects candidates that are then rescored exactly.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from engram.arrays import unique_sorted
from engram.index.bm25 import BM25
from engram.index.passages import cached_passage_docs
from engram.settings import AGENT_ROLES
from engram.store import db
from engram.text.tokens import tokenize

log = logging.getLogger(__name__)

TABLES = ("episodes", "facts", "kg_entities")
EXACT_LIMIT = 200_000       # up to this many vectors a query is one exact matmul
SKETCH_RESCORE = 4_000      # sketch candidates rescored exactly above EXACT_LIMIT
MAX_CACHED = 64             # indexes kept per process (least recently used dropped)
# How much a row borrows of its session neighbours' scores: (the row before it, the row after it)
Context = tuple[float, float]
NO_CONTEXT: Context = (0.0, 0.0)


@dataclass
class TableIndex:
    """The rows of one table of one tenant: ids, texts' BM25, vectors of the active embedder."""

    table: str
    signature: tuple
    key: tuple                  # (store, user_id, table, model, dim)
    rowids: np.ndarray          # int64 [n]: DuckDB rowid of each row, for point fetches
    ids: list[str]
    texts: pa.Array | None      # every row's text in one Arrow buffer (no object per row): BM25 is built
                                # from it, and candidates.fetch reads a candidate's immutable text here
    matrix: np.ndarray          # float32 [n_vec, dim], rows L2-normalised
    vec_row: np.ndarray         # int64 [n]: row of matrix or -1 when the row has no usable vector
    vec_pos: np.ndarray         # int64 [n_vec]: position of each matrix row in ids
    prev: np.ndarray            # int64 [n]: previous row of the same session if it asks a question, or -1
    next: np.ndarray            # int64 [n]: next row of the same session, or -1
    pos: dict[str, int] = field(default_factory=dict)
    pending: int = 0            # rows without a vector of the active embedder when it was built
    filled: bool = False        # some of them were embedded on the fly (PendingFill)
    inbox: tuple[int, pa.Table] | None = None  # (first position, columns) of inbox rows the store lacks
    _bm25: BM25 | None = None
    _sketch: list[np.ndarray] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def text(self, r: int) -> str:
        """The searchable text of row r (an episode's is "role: content")."""
        if self.texts is None:
            raise ValueError("this index keeps no texts")
        return self.texts[r].as_py() or ""

    def candidate_text(self, r: int, role: str | None = None) -> str:
        """Row r's text as the candidate queries return it (an episode's content, without "role: ")."""
        text = self.text(r)
        if self.table == "episodes" and role is not None and text.startswith(f"{role}: "):
            return text[len(role) + 2:]
        return text

    def candidate_rows(self, rows: list[int]) -> list[dict[str, Any]] | None:
        """The search columns of the rows at these positions when the index holds them; None: read the store."""
        return None

    def dated_positions(self, windows: Sequence[Any]) -> np.ndarray | None:
        """Positions (ascending) of every live row dated inside one of the windows (TimeWindow), when the
        index holds the rows' dates; None: read them from the store."""
        return None

    def dated_count(self, windows: Sequence[Any]) -> int | None:
        """How many rows are dated inside the windows, without listing them, when the index holds the
        rows' dates (a published generation's dead rows may be counted); None: unknown."""
        return None

    def dated_mask(self, rows: np.ndarray, windows: Sequence[Any]) -> np.ndarray:
        """Mask of the live rows at these positions dated inside one of the windows (an index whose
        dated_count is not None)."""
        raise NotImplementedError(f"{type(self).__name__} does not hold the rows' dates; read the store")

    @property
    def n(self) -> int:
        """Number of rows (embedded or not)."""
        return len(self.ids)

    @property
    def dim(self) -> int:
        """Vector width."""
        return int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0

    @property
    def n_vectors(self) -> int:
        """Rows with a vector of the active embedder."""
        return int(self.matrix.shape[0])

    def positions(self, ids: list[str]) -> np.ndarray:
        """Row positions of ids (-1 where absent)."""
        return np.array([self.pos.get(i, -1) for i in ids], dtype=np.int64)

    def vectors(self, vrows: np.ndarray) -> np.ndarray:
        """float32 vectors of the given vector rows (values of vec_row)."""
        return self.matrix[vrows]

    @property
    def bm25(self) -> BM25:
        """BM25 over every row's text (a long one by its passages), built on first lexical use."""
        with self._lock:
            if self._bm25 is None:
                self._bm25 = BM25(*cached_passage_docs(text_list(self.texts)))
            return self._bm25

    def similarities(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact cosine of the query with the given rows (0 for rows without a vector)."""
        out = np.zeros(len(rows), dtype=np.float32)
        vr = self.vec_row[rows]
        has = vr >= 0
        if has.any():
            out[has] = self.matrix[vr[has]] @ qvec
        return out

    def vector_top(self, qvec: np.ndarray, want: int, context: Context = NO_CONTEXT) -> tuple[np.ndarray, np.ndarray]:
        """The `want` best rows by (context-smoothed) cosine: (row positions, scores), best first.

        With a context, a row's score adds context[0] x the cosine of the row before it in the session
        and context[1] x that of the row after it.
        """
        n_vec = self.matrix.shape[0]
        if n_vec == 0 or want <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if n_vec <= EXACT_LIMIT:
            sims = self.matrix @ qvec
            rows = self.vec_pos
        else:
            sketch_rows = self._sketch_top(qvec, max(SKETCH_RESCORE, 20 * want))
            rows = self.vec_pos[sketch_rows]
            sims = self.matrix[sketch_rows] @ qvec
        return smoothed_top(rows, sims, want, context, self.prev, self.next, lambda p: self.similarities(qvec, p))

    def lexical_scores(self, query: str, context: Context = NO_CONTEXT) -> np.ndarray:
        """BM25 of every row for the query, optionally smoothed with session neighbours."""
        scores = self.bm25.score(tokenize(query))
        if any(context) and scores.size:
            scores = scores + context[0] * gather(scores, self.prev) + context[1] * gather(scores, self.next)
        return scores

    def _sketch_top(self, qvec: np.ndarray, want: int) -> np.ndarray:
        """Matrix rows nearest by Hamming distance of sign bits (about `want`, ties cut by position)."""
        with self._lock:
            if self._sketch is None:
                self._sketch = [np.ascontiguousarray(col) for col in _sign_words(self.matrix).T]
        qwords = _sign_words(qvec[None, :])[0]
        distance = np.bitwise_count(self._sketch[0] ^ qwords[0]).astype(np.uint16)
        for col, word in zip(self._sketch[1:], qwords[1:], strict=True):
            distance += np.bitwise_count(col ^ word)
        want = min(want, len(distance))
        # distances are small integers: a histogram finds the cut-off without sorting a million rows
        cutoff = int(np.searchsorted(np.cumsum(np.bincount(distance)), want))
        inside = np.flatnonzero(distance < cutoff)
        ties = np.flatnonzero(distance == cutoff)[: want - len(inside)]
        return np.concatenate([inside, ties])


def _sign_words(matrix: np.ndarray) -> np.ndarray:
    """Sign bits of each row packed into uint64 words (column-major friendly), zero-padded."""
    bits = np.packbits(matrix > 0, axis=1)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return np.ascontiguousarray(bits).view(np.uint64)


def smoothed_top(
    rows: np.ndarray, sims: np.ndarray, want: int, context: Context, prev: np.ndarray, nxt: np.ndarray,
    cosines: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """The `want` best of the scored `rows` (positions, cosines), best first, each score plus context[0] x
    the cosine of the row before it and context[1] x that of the row after; `cosines(positions)` scores
    the neighbours that are not among `rows`."""
    if any(context):
        full = np.zeros(len(prev), dtype=np.float32)
        full[rows] = sims
        nb = unique_sorted(np.concatenate([prev[rows], nxt[rows]]))
        nb = nb[(nb >= 0)]
        missing = nb[full[nb] == 0]
        if len(missing):
            full[missing] = cosines(missing)
        sims = sims + context[0] * gather(full, prev[rows]) + context[1] * gather(full, nxt[rows])
    k = min(want, len(rows))
    top = np.argpartition(-sims, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
    top = top[np.argsort(-sims[top], kind="stable")]
    return rows[top].astype(np.int64), sims[top].astype(np.float32)


def gather(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """values[idx] as float32, 0 where idx is -1 (no such neighbour)."""
    out = np.zeros(len(idx), dtype=np.float32)
    ok = idx >= 0
    out[ok] = values[idx[ok]]
    return out


def _neighbours(sessions: list[str | None], texts: list[str | None], roles: list[str | None] | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each row's session neighbours: the row before it when that row asks a question (this row is its
    answer and borrows its words), and the row after it.

    An agent's reply (role in AGENT_ROLES) borrows nothing from the request before it: in an agent
    transcript nearly every reply follows a question, and a reply lifted to its request's rank filled
    the top of a search with the agent's markdown instead of what the user said (BEAM, bench/quality/BEAM.md).
    """
    n = len(sessions)
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    for i in range(1, n):
        if sessions[i] is not None and sessions[i] == sessions[i - 1]:
            nxt[i - 1] = i
            if "?" in (texts[i - 1] or "") and not (roles and (roles[i] or "").lower() in AGENT_ROLES):
                prev[i] = i - 1
    return prev, nxt


@dataclass(frozen=True)
class PendingFill:
    """How a search embeds rows the embedding queue has not reached yet: the newest `limit` of them, with the
    embedder of the query (the same text and model as the queue, so the vectors are the ones it will store)."""

    embed: Callable[[list[str]], np.ndarray]
    limit: int
    model: str  # the embedder's model: on-the-fly vectors are kept per (model, text) across index rebuilds


class _FillCache:
    """Vectors embedded on the fly, per (model, text), newest kept: every write changes the table's
    signature and rebuilds its index, and without this a search would embed the same pending rows again
    each time (seconds with MiniLM for a backlog of hundreds)."""

    def __init__(self, max_entries: int = 8192) -> None:
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def get(self, model: str, texts: list[str]) -> list[np.ndarray | None]:
        with self._lock:
            found = [self._vectors.get((model, t)) for t in texts]
            for t, v in zip(texts, found, strict=True):
                if v is not None:
                    self._vectors.move_to_end((model, t))
        return found

    def put(self, model: str, texts: list[str], vectors: np.ndarray) -> None:
        with self._lock:
            for t, v in zip(texts, vectors, strict=True):
                self._vectors[(model, t)] = v
            while len(self._vectors) > self.max_entries:
                self._vectors.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()


FILLED = _FillCache()


def build_index(con: db.Connection, table: str, user_id: str, model: str, dim: int, signature: tuple,
                key: tuple = (), query: str | None = None, fill: PendingFill | None = None,
                extra: pa.Table | None = None, **params: Any) -> TableIndex:
    """Read one table of one tenant into a TableIndex (`query` and `params`: a subset of the rows; `extra`:
    inbox rows the store does not hold yet, appended)."""
    arrow = db.query_arrow(con, query or f"queries/index/query_index_{table}", user_id=user_id, model=model, dim=dim,
                           **params)
    stored = arrow.num_rows
    if extra is not None and extra.num_rows:
        arrow = pa.concat_tables([arrow, extra.select(arrow.column_names).cast(arrow.schema)])
    index = index_of_rows(arrow, table, dim, signature, key, fill)
    if extra is not None and extra.num_rows:
        index.inbox = (stored, extra)
    return index


def index_of_rows(arrow: pa.Table, table: str, dim: int, signature: tuple, key: tuple = (),
                  fill: PendingFill | None = None) -> TableIndex:
    """A TableIndex of rows read with the columns of the query_index_* queries; with `fill`, rows without a
    vector (their pending_text) are embedded on the fly, the newest first, up to fill.limit."""
    ids = arrow.column("id").to_pylist()
    rowids = arrow.column("row_id").to_numpy().astype(np.int64)
    sessions = arrow.column("session_id").to_pylist()
    emb = arrow.column("embedding").combine_chunks()
    valid = np.asarray(emb.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if len(emb) and valid.any():
        present = emb.filter(pa.array(valid))
        flat = present.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        matrix = np.ascontiguousarray(flat.reshape(len(present), dim))
    else:
        matrix = np.zeros((0, dim), dtype=np.float32)
    vec_pos = np.flatnonzero(valid).astype(np.int64)
    pending = _pending_rows(arrow, valid)
    filled = False
    if fill is not None and fill.limit > 0 and len(pending):
        chosen = np.sort(pending[np.argsort(-rowids[pending], kind="stable")[: fill.limit]])
        extra = _embedded(fill, arrow.column("pending_text").take(pa.array(chosen)).to_pylist(), dim)
        if extra is not None:
            order = np.argsort(np.concatenate([vec_pos, chosen]), kind="stable")  # matrix rows in row order
            matrix = np.ascontiguousarray(np.concatenate([matrix, extra])[order])
            vec_pos = np.concatenate([vec_pos, chosen])[order]
            filled = True
    vec_row = np.full(len(ids), -1, dtype=np.int64)
    vec_row[vec_pos] = np.arange(len(vec_pos))
    texts = arrow.column("text").combine_chunks()
    roles = arrow.column("role").to_pylist() if "role" in arrow.column_names else None
    prev, nxt = _neighbours(sessions, text_list(texts), roles)
    return TableIndex(
        table=table, signature=signature, key=key, rowids=rowids, ids=ids, texts=texts,
        matrix=matrix, vec_row=vec_row, vec_pos=vec_pos, prev=prev, next=nxt,
        pos={i: p for p, i in enumerate(ids)}, pending=len(pending), filled=filled,
    )


def _pending_rows(arrow: pa.Table, valid: np.ndarray) -> np.ndarray:
    """Positions of the rows without a vector that have a text the embedding queue would embed."""
    if "pending_text" not in arrow.column_names:
        return np.zeros(0, np.int64)
    has_text = np.asarray(arrow.column("pending_text").combine_chunks().is_valid().to_numpy(zero_copy_only=False),
                          dtype=bool)
    return np.flatnonzero(has_text & ~valid).astype(np.int64)


def _embedded(fill: PendingFill, texts: list[str], dim: int) -> np.ndarray | None:
    """The texts' vectors, L2-normalised as stored ones are; None (the rows stay word-only) when the embedder
    fails or returns something unusable: a search never fails for a row the queue has not reached."""
    known = FILLED.get(fill.model, texts)
    todo = [t for t, v in zip(texts, known, strict=True) if v is None]
    if todo:
        try:
            vectors = np.asarray(fill.embed(todo), dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - the query's own embedding already worked; see the docstring
            log.warning("pending rows not embedded on the fly (%s); found by their words only", type(exc).__name__)
            return None
        if not remember_filled(fill.model, todo, vectors, dim):
            return None
        known = FILLED.get(fill.model, texts)
    if any(v is None for v in known):  # evicted meanwhile by another thread's fill: word-only this time
        return None
    return np.ascontiguousarray(np.stack(known).astype(np.float32, copy=False))


def remember_filled(model: str, texts: list[str], vectors: np.ndarray, dim: int) -> bool:
    """Keep vectors embedded on the fly for pending texts (L2-normalised, as stored ones are); False, and
    nothing kept, when they are unusable (wrong shape, not finite)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape != (len(texts), dim) or not np.isfinite(vectors).all():
        log.warning("pending rows not embedded on the fly: the embedder returned shape %s", vectors.shape)
        return False
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    FILLED.put(model, texts, vectors / np.where(norms > 0, norms, 1.0))
    return True


def wants_fill(index: TableIndex, fill: PendingFill | None) -> bool:
    """Whether an index built without on-the-fly vectors should be rebuilt with them."""
    return fill is not None and fill.limit > 0 and index.pending > 0 and not index.filled


def text_list(texts: pa.Array | None) -> list[str]:
    """An index's texts as Python strings (none when it keeps none; a null text is "")."""
    return [] if texts is None else [t or "" for t in texts.to_pylist()]


def table_signature(con: db.Connection, table: str, user_id: str) -> tuple:
    """(n, n_embedded, newest) of the tenant's rows of `table`: an index is current while it is unchanged."""
    return tuple(db.rows(con, f"queries/index/query_signature_{table}", user_id=user_id)[0])


def unit_signatures(con: db.Connection, user_id: str) -> dict[str, tuple]:
    """The episodes' and facts' signatures of the tenant, read in one round trip: the two named
    signature queries side by side (one definition of each signature)."""
    episodes, facts = (db.sql(f"queries/index/query_signature_{t}") for t in ("episodes", "facts"))
    row = con.execute(f"select * from (\n{episodes}\n) as e, (\n{facts}\n) as f", {"user_id": user_id}).fetchall()[0]
    return {"episodes": tuple(row[:3]), "facts": tuple(row[3:])}


@lru_cache(maxsize=64)
def resolved(db_path: Path | str) -> str:
    """The absolute path of a store, as cache keys name it (resolved once per path and process)."""
    return str(Path(db_path).resolve())


class IndexCache:
    """Process-wide cache of TableIndex objects, checked against a cheap signature query per use."""

    def __init__(self, max_entries: int = MAX_CACHED) -> None:
        self._entries: OrderedDict[tuple, TableIndex] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.builds = 0

    def get(self, con: db.Connection, db_path: Path | str, table: str, user_id: str, model: str, dim: int,
            signature: tuple | None = None, fill: PendingFill | None = None,
            extra: pa.Table | None = None) -> TableIndex:
        """The current index of (tenant, table) for vectors of (model, dim); rebuilt if the rows changed
        (`signature`: the table's signature row when the caller has just read it), or to embed its pending
        rows on the fly when `fill` asks and it was built without."""
        if table not in TABLES:
            raise ValueError(f"table: unknown {table!r}")
        if signature is None:
            signature = table_signature(con, table, user_id)
        key = (resolved(db_path), user_id, table, model, dim)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.signature == signature and not wants_fill(entry, fill):
                self._entries.move_to_end(key)
                return entry
        index = build_index(con, table, user_id, model, dim, signature, key, fill=fill, extra=extra)
        log.info("built %s index: %d rows, %d vectors", table, index.n, index.matrix.shape[0])
        with self._lock:
            self.builds += 1
            self._entries[key] = index
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return index

    def invalidate(self, key: tuple) -> None:
        """Drop one index (its rowids no longer match the store); the next get rebuilds it."""
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        """Drop every cached index."""
        with self._lock:
            self._entries.clear()


# One cache per process, like embed._minilm: the point is to survive between queries.
CACHE = IndexCache()


def describe(index: TableIndex) -> dict[str, Any]:
    """Counts of an index, for diagnostics."""
    return {"table": index.table, "rows": index.n, "vectors": int(index.matrix.shape[0])}
