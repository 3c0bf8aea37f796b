"""On-disk search indexes of one tenant's table: written by publish (and `engram embed`), memory-mapped by readers.

Layout under the index root (settings.index_dir, default <db_path>.indexes):

    <tenant key>/<table>-<model>-<dim>/CURRENT     names the live generation (replaced atomically)
    <tenant key>/<table>-<model>-<dim>/g<...>/      one generation: manifest.json, numpy arrays, columns.arrow,
                                                    ann.usearch and ann_rows.npy (engram.query.ann_graph)

A generation is written under a temporary name, fsynced and renamed, and only then named in
CURRENT, so a reader sees a whole old index or a whole new one. It holds every row's text, vector and
search columns (status, validity, confidence, privacy, tags, ...: what candidates.eligible decides by),
read in one snapshot. Its manifest records the run, the row watermark (the table's highest rowid) and
the newest update it covers (`covered`: every update of facts and episodes sets changed_at). A reader
reads exactly from DuckDB the delta: rows above the watermark, rows updated since `covered`, and rows
that had no vector when it was written; their old copies are masked. When the store holds fewer rows
than the generation and the delta account for, the reader finds the deleted ones by rowid and masks
them too. So a deleted, merged, deprecated or forgotten row in an old generation never comes back,
and a search filters its candidates without reading the store. A missing, stale or torn generation
raises IndexUnusable; the caller falls back to the exact in-memory index with a warning, and the next
publish writes a new one.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cached_property
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engram import clock
from engram.arrays import unique_sorted
from engram.errors import StoreError
from engram.query.ann_graph import ROWS_FILE, GraphParams, vector_rows, write_graph
from engram.query.lexical import tokenize
from engram.query.vector_index import (
    NO_CONTEXT,
    Context,
    TableIndex,
    build_index,
    gather,
    index_of_rows,
    resolved,
    smoothed_top,
    table_signature,
    text_list,
    unit_signatures,
)
from engram.store import db
from engram.store.durable import fsync_dir

log = logging.getLogger(__name__)

FORMAT = 5  # 2: prev links a row to the row before it only when that row asks a question; 3: a rowid sample;
# 4: the rows' search columns (columns.arrow) and the newest update covered; 5: graph keys apart from
# vector rows (ann_rows.npy), so the next publish can carry the graph over (engram.query.ann_graph)
CHECK_ROWS = 16  # rows of a generation whose (rowid, id) a reader checks against the store when it opens it
ANN_MIN = 50_000      # from this many vectors a generation carries an ANN graph; below, exact matmul
ANN_DTYPE = "i8"      # quantised graph vectors; exact float32 rescoring (bench/SEARCH.md)
# Graph links per node, and nodes visited per insert and per query. At 1M real vectors (bench/SEARCH.md,
# bench/ann_params.py), recall@10 after rescoring, expansion_search 1024: 16/64 .970-.997 from one build
# to the next, 24/64 .987-1.0, 16/128 .998 in both builds (build 182-189 s against 77-109 s; 3.3 ms a
# query against 1.8). At expansion_search 128 (before) 16/64 had .885.
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 128
ANN_EXPANSION_SEARCH = 1024
ANN_RESCORE = 100     # graph candidates rescored exactly per query, at least
# A generation with a graph also keeps its vectors as float16 (half the pages): the nightly pair search
# rescores its graph candidates with them (engram.consolidate.neighbours), so a night at 1M facts maps
# 0.77 GB of vectors, not 1.5 GB. Queries keep float32 rescoring.
HALF_VECTORS = "vectors16"
K1, B = 1.2, 0.75     # BM25, as engram.query.lexical.BM25
ARRAYS = ("rowids", "ids", "id_order", "prev", "next", "vec_row", "vec_pos", "vectors", "pending",
          "bm25_terms", "bm25_offsets", "bm25_docs", "bm25_tfs", "bm25_lengths", "text_data", "text_offsets")
COLUMNS_FILE = "columns.arrow"  # every row's search columns (candidates.COLUMNS), in row order, Arrow IPC
# The time a question's window reads of a row, as sql/queries/{fact,episode}_ids_in_window.sql do: a fact's
# valid_from, else when it was asserted; an episode's created_at.
WINDOW_TIME = {"facts": ("valid_from", "asserted_at"), "episodes": ("created_at",)}
_UNDATED = np.iinfo(np.int64).min  # no window holds it
# The rows' moments sorted, and the row of each: a window's rows are one binary search away, not a scan of
# every row (3-26 ms a question at 1M). Written from 2026-11-27 on; a generation without them is scanned.
SORTED_MOMENTS, MOMENT_ORDER = "sorted_moments", "moment_order"
# Each posting's document length, beside bm25_docs: BM25 reads it in order instead of gathering each
# document's norm (written from 2026-11-27 on; a generation without it gathers).
POSTING_LENGTHS = "bm25_doc_lengths"


class IndexUnusable(StoreError):
    """The on-disk index cannot serve this query (missing, stale or torn); search exactly instead."""


class IndexNotPublished(IndexUnusable):
    """No generation was ever published for this table (normal below search_index_min_rows)."""


def root(settings: Any) -> Path:
    """The index root of a store."""
    return Path(settings.index_dir) if settings.index_dir else Path(f"{settings.db_path}.indexes")


def index_dir(settings: Any, user_id: str, table: str, model: str, dim: int) -> Path:
    """Where the generations of one tenant's table (for one embedder) live."""
    tenant = blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model)[:60]
    return root(settings) / tenant / f"{table}-{slug}-{dim}"


# ---------------------------------------------------------------- BM25 postings (CSR)


def postings(docs: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
    """CSR postings of token lists: sorted terms, offsets into (docs, tfs, the docs' lengths), and each
    doc's length."""
    lengths = np.fromiter((len(d) for d in docs), dtype=np.float32, count=len(docs))
    flat = [t for d in docs for t in d]
    if not flat:
        return {"bm25_terms": np.zeros(0, dtype="U1"), "bm25_offsets": np.zeros(1, np.int64),
                "bm25_docs": np.zeros(0, np.int32), "bm25_tfs": np.zeros(0, np.float32), "bm25_lengths": lengths,
                POSTING_LENGTHS: np.zeros(0, np.float32)}
    doc_of = np.repeat(np.arange(len(docs), dtype=np.int64), lengths.astype(np.int64))
    terms, term_id = np.unique(np.array(flat), return_inverse=True)
    pair, tf = np.unique(term_id.astype(np.int64) * len(docs) + doc_of, return_counts=True)
    tid, doc = pair // len(docs), pair % len(docs)
    offsets = np.zeros(len(terms) + 1, np.int64)
    np.cumsum(np.bincount(tid, minlength=len(terms)), out=offsets[1:])
    return {"bm25_terms": terms, "bm25_offsets": offsets, "bm25_docs": doc.astype(np.int32),
            "bm25_tfs": tf.astype(np.float32), "bm25_lengths": lengths, POSTING_LENGTHS: lengths[doc]}


class Postings:
    """Lookup side of `postings` (arrays in memory or memory-mapped)."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.terms = arrays["bm25_terms"]
        self.offsets = arrays["bm25_offsets"]
        self.docs = arrays["bm25_docs"]
        self.tfs = arrays["bm25_tfs"]
        self.lengths = arrays["bm25_lengths"]
        self.doc_lengths = arrays.get(POSTING_LENGTHS)  # None in a generation written before them
        self.n = len(self.lengths)
        self.total_length = float(np.sum(self.lengths, dtype=np.float64))

    def hit(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(doc ids, term frequencies, the docs' lengths or None) of one term. Without the lengths the ids
        are intp, which numpy indexes with directly (int32 ids were converted on each of the three
        fancy-indexing steps of a BM25 term); with them, the ids are only indexed once."""
        i = int(np.searchsorted(self.terms, term))
        if i >= len(self.terms) or self.terms[i] != term:
            return np.zeros(0, np.intp), np.zeros(0, np.float32), None
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        if self.doc_lengths is not None:
            return np.asarray(self.docs[lo:hi]), np.asarray(self.tfs[lo:hi]), np.asarray(self.doc_lengths[lo:hi])
        return np.asarray(self.docs[lo:hi]).astype(np.intp), np.asarray(self.tfs[lo:hi]), None


def _average_length(parts: list[Postings]) -> float:
    total = sum(p.total_length for p in parts)
    return total / max(sum(p.n for p in parts), 1) if total else 1.0


def _length_norm(lengths: np.ndarray, avg: float) -> np.ndarray:
    """k1 (1 - b + b len / avg len), in float32 (per document or per posting: the same values)."""
    return (K1 * (1 - B + B * np.asarray(lengths) / avg)).astype(np.float32)


def bm25_norms(parts: list[Postings]) -> list[np.ndarray]:
    """Each document's length normalisation k1 (1 - b + b len / avg len) over the postings read as one corpus."""
    avg = _average_length(parts)
    return [_length_norm(p.lengths, avg) for p in parts]


def bm25_scores(parts: list[Postings], query_tokens: Sequence[str], dead: list[np.ndarray | None],
                norms: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Okapi BM25 (as lexical.BM25) over several postings read as one corpus, one array per part; dead
    docs score 0 and are left out of the document count (their term counts stay: a small, temporary
    idf drift until the next publish)."""
    flat = bm25_corpus_scores(parts, query_tokens, dead, norms)
    return np.split(flat, np.cumsum([p.n for p in parts])[:-1])


def bm25_corpus_scores(parts: list[Postings], query_tokens: Sequence[str], dead: list[np.ndarray | None],
                       norms: list[np.ndarray] | None = None, n_live: int | None = None) -> np.ndarray:
    """bm25_scores in one array, the parts' documents one after another (`norms`: bm25_norms, when the
    caller keeps them; only parts without their postings' lengths read them. `n_live`: the live document
    count when the caller keeps it)."""
    n = sum(p.n for p in parts) - sum(int(d.sum()) for d in dead if d is not None) if n_live is None else n_live
    flat = np.zeros(sum(p.n for p in parts), dtype=np.float32)
    ends = np.cumsum([p.n for p in parts])
    out = [flat[end - p.n:end] for p, end in zip(parts, ends, strict=True)]  # views of flat
    avg = _average_length(parts)
    if norms is None and any(p.doc_lengths is None for p in parts):
        norms = bm25_norms(parts)
    for term in set(query_tokens):
        hits = [p.hit(term) for p in parts]
        df = sum(len(ids) for ids, _, _ in hits)
        if df == 0:
            continue
        idf = math.log(1 + (max(n, df) - df + 0.5) / (df + 0.5))
        for k, (scores, (ids, tfs, lengths)) in enumerate(zip(out, hits, strict=True)):
            if len(ids):
                # the postings' own lengths: read in order, where norm[ids] gathered one per document
                # (1M facts, a 25-term question: 6.1 -> 3.3 ms)
                norm = _length_norm(lengths, avg) if lengths is not None else norms[k][ids]  # type: ignore[index]
                # add.at, not scores[ids] += ...: the same sums without gathering the scores first
                # (BM25 at 1M facts: mean 2.15 -> 1.78 ms a query, bench/SEARCH.md)
                np.add.at(scores, ids, idf * tfs * (K1 + 1) / (tfs + norm))
    for scores, d in zip(out, dead, strict=True):
        if d is not None:
            scores[d] = 0.0
    return flat


def row_moments(columns: pa.Table, table: str) -> np.ndarray:
    """Each row's time as a window reads it (WINDOW_TIME), microseconds since the epoch, naive UTC;
    _UNDATED for a row without one."""
    names = WINDOW_TIME[table]
    moment = columns[names[0]] if len(names) == 1 else pc.coalesce(*(columns[n] for n in names))
    return np.asarray(moment.cast(pa.timestamp("us")).cast(pa.int64()).fill_null(_UNDATED).to_numpy(),
                      dtype=np.int64)


def _spans(windows: Sequence[Any]) -> list[tuple[int, int]]:
    """The windows' [start, end) in microseconds since the epoch (naive UTC, as row_moments counts),
    overlapping ones merged: disjoint and ascending."""
    bounds = sorted(tuple(int(np.datetime64(t, "us").astype(np.int64)) for t in (w.start, w.end)) for w in windows)
    merged: list[tuple[int, int]] = []
    for start, end in bounds:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def in_windows(moments: np.ndarray, windows: Sequence[Any]) -> np.ndarray:
    """Mask of the moments inside any window ([start, end), naive UTC)."""
    inside = np.zeros(len(moments), bool)
    for start, end in _spans(windows):
        inside |= (moments >= start) & (moments < end)
    return inside


def _sorted_ranges(sorted_moments: np.ndarray, windows: Sequence[Any]) -> list[tuple[int, int]]:
    """Each window's [lo, hi) in the sorted moments (disjoint: overlapping windows are merged first)."""
    spans = _spans(windows)
    if not spans:
        return []
    at = np.searchsorted(sorted_moments, np.array(spans, np.int64).ravel(), side="left").reshape(-1, 2)
    return [(int(lo), int(hi)) for lo, hi in at if hi > lo]


def sorted_in_windows(sorted_moments: np.ndarray, order: np.ndarray, windows: Sequence[Any]) -> np.ndarray:
    """Positions (ascending) of the rows inside any window, given the moments sorted and each one's row
    (`order`): a binary search per window, then the rows found sorted."""
    ranges = _sorted_ranges(sorted_moments, windows)
    if not ranges:
        return np.zeros(0, np.int64)
    found = np.concatenate([np.asarray(order[lo:hi]) for lo, hi in ranges])
    if len(found) > len(order) // 8:  # most rows: a mask costs less than sorting them
        mask = np.zeros(len(order), bool)
        mask[found] = True
        return np.flatnonzero(mask)
    return np.sort(found)


# ---------------------------------------------------------------- writing


def _save(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


def _save_table(path: Path, table: pa.Table) -> None:
    """An Arrow IPC file (uncompressed: readers map it)."""
    with open(path, "wb") as fh:
        with pa.ipc.new_file(fh, table.schema) as writer:
            writer.write_table(table)
        fh.flush()
        os.fsync(fh.fileno())


def _aligned_columns(columns: pa.Table, rowids: np.ndarray, table: str) -> pa.Table:
    """The search columns in the index's row order (both were read in one snapshot, so every rowid is there)."""
    have = columns["row_id"].to_numpy().astype(np.int64)
    order = np.argsort(have, kind="stable")
    at = np.searchsorted(have[order], rowids)
    take = order[np.minimum(at, max(len(have) - 1, 0))]
    if len(rowids) and (len(have) == 0 or not np.array_equal(have[take], rowids)):
        raise StoreError(f"{table} index: the search columns and the rows disagree (not one snapshot)")
    kept = [c for c in columns.column_names if c not in ("row_id", "id", "changed_at")]  # ids: the index has them
    return columns.take(pa.array(take, pa.int64())).select(kept)


def write(con: db.Connection, settings: Any, table: str, user_id: str, model: str, dim: int,
          run_id: str | None = None, signature: tuple | None = None) -> dict[str, Any]:
    """Write a new generation of one tenant's table index and switch it in; older generations are removed."""
    t0 = time.perf_counter()
    signature = signature or table_signature(con, table, user_id)
    watermark = signature[2]  # newest row time, for the record
    # taken before the snapshot: an update committed after it sets a later changed_at
    read_at = datetime.now(UTC).replace(tzinfo=None)
    with db.transaction(con):  # one snapshot: the rows, their columns and both watermarks agree
        max_rowid = db.rows(con, f"queries/index_max_rowid_{table}")[0][0]
        index = build_index(con, table, user_id, model, dim, signature)
        columns = db.query_arrow(con, f"queries/index_columns_{table}", user_id=user_id)
    newest_update = pc.max(columns["changed_at"]).as_py() if columns.num_rows else None
    # readers read again the rows updated after this: the newest update in the snapshot (one statement
    # gives every row it updates the same time, so `after`, not `from`, keeps a night's last stage out of
    # every reader's delta), or the time just before the snapshot when no row was ever updated
    covered = min(newest_update, read_at) if newest_update else read_at
    columns = _aligned_columns(columns, index.rowids, table)
    arrays: dict[str, np.ndarray] = {
        "rowids": index.rowids, "ids": np.array(index.ids, dtype=str) if index.n else np.zeros(0, "U1"),
        "prev": index.prev, "next": index.next, "vec_row": index.vec_row, "vec_pos": index.vec_pos,
        "vectors": np.ascontiguousarray(index.matrix, dtype=np.float32),
    }
    arrays["id_order"] = np.argsort(arrays["ids"], kind="stable").astype(np.int64)
    moments = row_moments(columns, table)
    arrays[MOMENT_ORDER] = np.argsort(moments, kind="stable").astype(np.int64)
    arrays[SORTED_MOMENTS] = moments[arrays[MOMENT_ORDER]]
    pending = np.flatnonzero(index.vec_row < 0)
    arrays["pending"] = arrays["ids"][pending] if len(pending) else np.zeros(0, "U1")
    texts = text_list(index.texts)
    arrays |= postings([tokenize(t) for t in texts])
    encoded = [t.encode("utf-8") for t in texts]
    arrays["text_offsets"] = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(b) for b in encoded], out=arrays["text_offsets"][1:])
    arrays["text_data"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    n_vec = int(index.matrix.shape[0])
    target = index_dir(settings, user_id, table, model, dim)
    target.mkdir(parents=True, exist_ok=True)
    name = f"g{clock.now():%Y%m%dT%H%M%S%f}-{os.getpid()}"
    tmp = target / f".tmp-{name}"
    tmp.mkdir()
    try:
        for key, array in arrays.items():
            _save(tmp / f"{key}.npy", array)
        _save_table(tmp / COLUMNS_FILE, columns)
        ann = n_vec >= ANN_MIN
        graph: dict[str, Any] = {}
        if ann:
            _save(tmp / f"{HALF_VECTORS}.npy", arrays["vectors"].astype(np.float16))
            graph = write_graph(tmp, GraphParams(dim, ANN_DTYPE, ANN_CONNECTIVITY, ANN_EXPANSION_ADD),
                                index.matrix, index.rowids[index.vec_pos], arrays["ids"][index.vec_pos],
                                _live_generation(target), _save)
        files = {p.name: p.stat().st_size for p in tmp.iterdir()}
        manifest = {
            "format": FORMAT, "user_id": user_id, "table": table, "model": model, "dim": dim,
            "run_id": run_id, "watermark": watermark.isoformat() if watermark else None, "max_rowid": max_rowid,
            "covered": covered.isoformat(),
            "rows": index.n, "vectors": n_vec, "ann": ann, **graph,
            "written_at": clock.now().isoformat(), "files": files,
        }
        with open(tmp / "manifest.json", "w") as fh:
            json.dump(manifest, fh)
            fh.flush()
            os.fsync(fh.fileno())
        fsync_dir(tmp)
        os.rename(tmp, target / name)
        fsync_dir(target)
        pointer = target / ".CURRENT.tmp"
        pointer.write_text(name)
        with open(pointer) as fh:
            os.fsync(fh.fileno())
        os.replace(pointer, target / "CURRENT")  # the switch: atomic on POSIX
        fsync_dir(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for old in target.iterdir():  # readers that mapped an old generation keep their open files
        if old.is_dir() and old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    log.info("wrote %s index generation: %d rows, %d vectors", table, index.n, n_vec)
    return {"rows": index.n, "written": True, "vectors": n_vec, "ann": ann, "graph": graph.get("ann_graph"),
            "seconds": round(time.perf_counter() - t0, 3)}


def _live_generation(target: Path) -> Path | None:
    """The directory of the generation CURRENT names under `target`, if there is one."""
    try:
        path = target / (target / "CURRENT").read_text().strip()
    except OSError:
        return None
    return path if path.is_dir() else None


def check_sample(rowids: np.ndarray, ids: np.ndarray) -> list[list[Any]]:
    """(rowid, id) of up to CHECK_ROWS rows spread over the generation, first and last included."""
    if len(rowids) == 0:
        return []
    at = unique_sorted(np.linspace(0, len(rowids) - 1, min(CHECK_ROWS, len(rowids))).astype(np.int64))
    return [[int(rowids[i]), str(ids[i])] for i in at]


def check_against_store(con: db.Connection, gen: Generation, table: str, user_id: str) -> None:
    """IndexUnusable unless the store still holds the generation's sampled rows at their rowids.

    A store deleted and created again at the same path restarts its rowids: without this check its new
    rows below the old watermark would never be searched, and the old rowids would name other rows.
    """
    sample = check_sample(np.asarray(gen.arrays["rowids"]), np.asarray(gen.arrays["ids"]))
    if not sample:
        return
    found = dict(db.rows(con, f"queries/index_check_{table}", user_id=user_id, row_ids=[r for r, _ in sample]))
    # a sampled row deleted since the publish is normal (forget, archive); another row in its place is not
    if not found or any(found.get(rowid, id_) != id_ for rowid, id_ in sample):
        raise IndexUnusable(f"{table} index: stale (the store no longer holds its rows: recreated or compacted)")


def write_tenant(settings: Any, con: db.Connection, user_id: str, model: str, dim: int,
                 run_id: str | None = None, tables: Sequence[str] = ("episodes", "facts")) -> dict[str, Any]:
    """Write the indexes of a tenant's searchable tables (publish).

    A table gets an index from settings.search_index_min_rows rows on; one that has an index keeps it
    current whatever its size, so a published generation never goes stale behind a shrinking table.
    """
    out: dict[str, Any] = {}
    signatures = unit_signatures(con, user_id)  # both tables' in one round trip (a tenant's night counts them)
    for table in tables:
        signature = signatures[table]
        published = (index_dir(settings, user_id, table, model, dim) / "CURRENT").exists()
        if signature[0] < settings.search_index_min_rows and not published:
            out[table] = {"rows": signature[0], "written": False}
            continue
        out[table] = write(con, settings, table, user_id, model, dim, run_id, signature)
    return out


# ---------------------------------------------------------------- reading


class Generation:
    """One published generation, memory-mapped read-only."""

    def __init__(self, path: Path, user_id: str, table: str, model: str, dim: int) -> None:
        try:
            manifest = json.loads((path / "manifest.json").read_text())
        except (OSError, ValueError) as exc:
            raise IndexUnusable(f"{table} index: unreadable manifest ({type(exc).__name__})") from None
        expect = {"format": FORMAT, "user_id": user_id, "table": table, "model": model, "dim": dim}
        wrong = [k for k, v in expect.items() if manifest.get(k) != v]
        if wrong:
            raise IndexUnusable(f"{table} index: stale ({', '.join(wrong)} differ)")
        for fname, size in manifest.get("files", {}).items():
            try:
                actual = (path / fname).stat().st_size
            except OSError:
                raise IndexUnusable(f"{table} index: torn ({fname} missing)") from None
            if actual != size:
                raise IndexUnusable(f"{table} index: torn ({fname} is {actual} bytes, manifest says {size})")
        try:
            # plain ndarray views of the maps: np.memmap's Python-level indexing is slow per call
            self.arrays = {k: np.asarray(np.load(path / f"{k}.npy", mmap_mode="r", allow_pickle=False))
                           for k in ARRAYS}
            # the float16 vectors of a generation with a graph; the sorted moments and the postings'
            # document lengths of one written from 2026-11-27 on
            for optional in (HALF_VECTORS, SORTED_MOMENTS, MOMENT_ORDER, POSTING_LENGTHS):
                if f"{optional}.npy" in manifest.get("files", {}):
                    self.arrays[optional] = np.asarray(
                        np.load(path / f"{optional}.npy", mmap_mode="r", allow_pickle=False))
        except (OSError, ValueError) as exc:
            raise IndexUnusable(f"{table} index: unreadable arrays ({type(exc).__name__})") from None
        n = len(self.arrays["rowids"])
        shapes = {"vectors": (manifest["vectors"], dim), HALF_VECTORS: (manifest["vectors"], dim),
                  SORTED_MOMENTS: (n,), MOMENT_ORDER: (n,), POSTING_LENGTHS: self.arrays["bm25_docs"].shape}
        if manifest["rows"] != n or any(self.arrays[k].shape != shape for k, shape in shapes.items()
                                        if k in self.arrays):
            raise IndexUnusable(f"{table} index: torn (array shapes disagree with the manifest)")
        try:
            self.columns = pa.ipc.open_file(pa.memory_map(str(path / COLUMNS_FILE))).read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise IndexUnusable(f"{table} index: unreadable search columns ({type(exc).__name__})") from None
        if self.columns.num_rows != n:
            raise IndexUnusable(f"{table} index: torn (search columns disagree with the manifest)")
        self.path, self.manifest, self.n = path, manifest, n
        self.covered = datetime.fromisoformat(manifest["covered"])
        self.watermark = datetime.fromisoformat(manifest["watermark"]) if manifest["watermark"] else None
        self.ann = None
        self.ann_rows = np.zeros(0, np.int64)  # graph key -> vector row (engram.query.ann_graph)
        self._moments: np.ndarray | None = None
        if manifest["ann"]:
            from usearch.index import Index

            try:
                self.ann = Index.restore(str(path / "ann.usearch"), view=True)
            except Exception as exc:  # usearch raises RuntimeError/ValueError on a bad file
                raise IndexUnusable(f"{table} index: unreadable ANN graph ({type(exc).__name__})") from None
            if self.ann is None or len(self.ann) != manifest["vectors"]:
                raise IndexUnusable(f"{table} index: torn (ANN graph size)")
            self.ann.expansion_search = ANN_EXPANSION_SEARCH  # not kept in the file
            try:
                self.ann_rows = np.asarray(np.load(path / ROWS_FILE, mmap_mode="r", allow_pickle=False))
            except (OSError, ValueError) as exc:
                raise IndexUnusable(f"{table} index: unreadable ANN key map ({type(exc).__name__})") from None
        self.postings = Postings(self.arrays)

    def graph(self, expansion: int) -> Any:
        """A view of the ANN graph of its own searched at `expansion` (the shared one keeps the query
        search's), or None when the generation has no graph. Not kept by the generation: a night's two
        searches would save ~0.4 s of making it again, but its pages would stay resident (~230 MB at 1M)."""
        if self.ann is None:
            return None
        from usearch.index import Index

        view = Index.restore(str(self.path / "ann.usearch"), view=True)
        if view is None or len(view) != len(self.ann):
            raise IndexUnusable(f"{self.manifest['table']} index: torn (ANN graph changed under a reader)")
        view.expansion_search = expansion
        return view

    @property
    def moments(self) -> np.ndarray:
        """Each row's time as a question's window reads it (row_moments), read from the columns on first use."""
        if self._moments is None:
            self._moments = row_moments(self.columns, self.manifest["table"])
        return self._moments

    def dated(self, windows: Sequence[Any]) -> np.ndarray:
        """Positions (ascending) of the rows, dead or alive, dated inside any of the windows."""
        if MOMENT_ORDER in self.arrays:
            return sorted_in_windows(self.arrays[SORTED_MOMENTS], self.arrays[MOMENT_ORDER], windows)
        return np.flatnonzero(in_windows(self.moments, windows))

    def count_dated(self, windows: Sequence[Any]) -> int:
        """How many rows, dead or alive, are dated inside any of the windows (no row listed)."""
        if MOMENT_ORDER in self.arrays:
            return sum(hi - lo for lo, hi in _sorted_ranges(self.arrays[SORTED_MOMENTS], windows))
        return int(in_windows(self.moments, windows).sum())

    def positions_of(self, ids: Sequence[str]) -> np.ndarray:
        """Base positions of the given ids (-1 where absent)."""
        if not len(ids) or self.n == 0:
            return np.full(len(ids), -1, np.int64)
        order, sorted_ids = self.arrays["id_order"], self.arrays["ids"]
        keys = np.asarray(ids, dtype=str)
        # binary search through the sort order without materialising the sorted id array
        lo = np.zeros(len(keys), np.int64)
        hi = np.full(len(keys), self.n, np.int64)
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            less = np.zeros(len(keys), bool)
            less[active] = sorted_ids[order[mid[active]]] < keys[active]
            lo = np.where(active & less, mid + 1, lo)
            hi = np.where(active & ~less, mid, hi)
        out = np.full(len(keys), -1, np.int64)
        ok = lo < self.n
        found = order[lo[ok]]
        match = sorted_ids[found] == keys[ok]
        out[np.flatnonzero(ok)[match]] = found[match]
        return out


class _Ids:
    """Row position -> id over the base generation and the delta."""

    def __init__(self, base: np.ndarray, delta: list[str]) -> None:
        self.base, self.delta, self.nb = base, delta, len(base)

    def __len__(self) -> int:
        return self.nb + len(self.delta)

    def __getitem__(self, r: int) -> str:
        r = int(r)
        return str(self.base[r]) if r < self.nb else self.delta[r - self.nb]


class _Positions:
    """id -> row position; a row re-read in the delta is found at its delta position."""

    def __init__(self, gen: Generation, delta: dict[str, int], dead: np.ndarray) -> None:
        self.gen, self.delta, self.dead = gen, delta, dead

    def get(self, key: str, default: int | None = None) -> int | None:
        if key in self.delta:
            return self.delta[key]
        p = int(self.gen.positions_of([key])[0])
        return p if p >= 0 and not self.dead[p] else default

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __getitem__(self, key: str) -> int:
        p = self.get(key)
        if p is None:
            raise KeyError(key)
        return p


class PersistedTableIndex(TableIndex):
    """A published generation plus the delta read exactly from the store, searched as one index.

    Positions 0..nb-1 are the generation's rows, nb.. the delta's; the generation's copies of rows the
    delta re-read, and of rows deleted since, are dead (never returned). The search columns of a row
    come from the generation or, for the delta, from the store (`delta_columns`).
    """

    def __init__(self, gen: Generation, delta: TableIndex, delta_columns: pa.Table, signature: tuple,
                 key: tuple) -> None:
        a = gen.arrays
        nb, nbv = gen.n, gen.manifest["vectors"]
        dead = np.zeros(nb, bool)
        base_pos = gen.positions_of(delta.ids)
        dead[base_pos[base_pos >= 0]] = True
        self.gen, self.delta, self.dead, self.nb, self.nbv = gen, delta, dead, nb, nbv
        self.dead_vec = np.zeros(nbv, bool)
        dv = np.asarray(a["vec_row"])[dead]
        self.dead_vec[dv[dv >= 0]] = True
        shift = lambda arr, by: np.where(arr >= 0, arr + by, -1)  # noqa: E731
        super().__init__(
            table=delta.table, signature=signature, key=key,
            rowids=np.concatenate([np.asarray(a["rowids"]), delta.rowids]),
            ids=_Ids(a["ids"], delta.ids),  # type: ignore[arg-type]
            texts=None, matrix=delta.matrix,
            vec_row=np.concatenate([np.asarray(a["vec_row"]), shift(delta.vec_row, nbv)]),
            vec_pos=np.concatenate([np.asarray(a["vec_pos"]), delta.vec_pos + nb]),
            prev=np.concatenate([np.asarray(a["prev"]), shift(delta.prev, nb)]),
            next=np.concatenate([np.asarray(a["next"]), shift(delta.next, nb)]),
        )
        self.pos = _Positions(gen, {i: nb + p for p, i in enumerate(delta.ids)}, dead)  # type: ignore[assignment]
        self.delta_columns = delta_columns
        self._count_dead()
        self._delta_postings = Postings(postings([tokenize(t) for t in text_list(delta.texts)]))
        # the generation's postings carry their documents' lengths, or the norms are gathered per document
        self._norms = bm25_norms([gen.postings, self._delta_postings]) if gen.postings.doc_lengths is None else None

    @property
    def dim(self) -> int:
        return int(self.gen.manifest["dim"])

    def mark_dead(self, base_rows: np.ndarray) -> None:
        """Mask generation rows (positions) the store no longer holds."""
        self.dead[base_rows] = True
        dv = np.asarray(self.gen.arrays["vec_row"])[base_rows]
        self.dead_vec[dv[dv >= 0]] = True
        self._count_dead()

    def _count_dead(self) -> None:
        self.n_dead, self.n_dead_vec = int(self.dead.sum()), int(self.dead_vec.sum())

    def live_rows(self) -> int:
        """Rows this index can return: the generation's live ones and the delta."""
        return self.nb - self.n_dead + self.delta.n

    def candidate_rows(self, rows: list[int]) -> list[dict[str, Any]]:
        """The search columns of the live rows at these positions, each with its id, rowid and position."""
        at = np.asarray(rows, dtype=np.int64)
        base = at[at < self.nb]
        base = base[~self.dead[base]]
        out = []
        for part, first, columns in ((base, 0, self.gen.columns), (at[at >= self.nb], self.nb, self.delta_columns)):
            if not len(part):
                continue
            for r, row in zip(part.tolist(), columns.take(pa.array(part - first)).to_pylist(), strict=True):
                row |= {"row_id": int(self.rowids[r]), "id": self.ids[r], "pos": r}
                out.append(row)
        return out

    def dated_positions(self, windows: Sequence[Any]) -> np.ndarray:
        """Positions (ascending) of every live row dated inside one of the windows, from the generation's
        sorted moments and the delta's columns (no store read)."""
        base = self.gen.dated(windows)
        if self.n_dead:
            base = base[~self.dead[base]]
        delta = np.flatnonzero(in_windows(self._delta_moments, windows)) + self.nb
        return np.concatenate([base, delta])

    def dated_count(self, windows: Sequence[Any]) -> int:
        # the base's dead rows are counted: this sizes a window, dated_positions lists it
        return self.gen.count_dated(windows) + int(in_windows(self._delta_moments, windows).sum())

    def dated_mask(self, rows: np.ndarray, windows: Sequence[Any]) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        inside = np.zeros(len(rows), bool)
        base = rows < self.nb
        at = rows[base]
        inside[base] = in_windows(self.gen.moments[at], windows) & ~self.dead[at]
        inside[~base] = in_windows(self._delta_moments[rows[~base] - self.nb], windows)
        return inside

    @cached_property
    def _delta_moments(self) -> np.ndarray:
        """The delta rows' times as a window reads them (row_moments), read once per delta."""
        return row_moments(self.delta_columns, self.table)

    def text(self, r: int) -> str:
        """The searchable text of row r (an episode's is "role: content")."""
        if r < self.nb:
            off = self.gen.arrays["text_offsets"]
            return bytes(self.gen.arrays["text_data"][int(off[r]):int(off[r + 1])]).decode("utf-8")
        return self.delta.text(r - self.nb)

    def positions(self, ids: list[str]) -> np.ndarray:
        """Row positions of ids (-1 where absent), in one search of the generation's sorted ids."""
        out = self.gen.positions_of(ids)
        out[(out >= 0) & self.dead[np.maximum(out, 0)]] = -1
        for k, i in enumerate(ids):
            p = self.pos.delta.get(i)
            if p is not None:
                out[k] = p
        return out

    @property
    def n_vectors(self) -> int:
        return self.nbv + int(self.delta.matrix.shape[0])

    def vectors(self, vrows: np.ndarray) -> np.ndarray:
        vrows = np.asarray(vrows, dtype=np.int64)
        out = np.empty((len(vrows), self.dim), np.float32)
        base = vrows < self.nbv
        if base.any():
            take = vrows[base]
            order = np.argsort(take)  # sorted reads of the memory map
            got = np.empty((len(take), self.dim), np.float32)
            got[order] = self.gen.arrays["vectors"][take[order]]
            out[base] = got
        if (~base).any():
            out[~base] = self.delta.matrix[vrows[~base] - self.nbv]
        return out

    def similarities(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), dtype=np.float32)
        vr = self.vec_row[np.asarray(rows, dtype=np.int64)]
        has = vr >= 0
        if has.any():
            out[has] = self.vectors(vr[has]) @ qvec
        return out

    def vector_top(self, qvec: np.ndarray, want: int, context: Context = NO_CONTEXT) -> tuple[np.ndarray, np.ndarray]:
        if self.n_vectors == 0 or want <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.gen.ann is None and any(context):
            # every vector scored, as the in-memory index does: a row lifted by the row before it (a
            # question it answers) must not be cut for its own low cosine before the context is added
            rows, sims = self._all_scored(qvec)
        else:
            vrows = self._base_candidates(qvec, want)
            vrows = np.concatenate([vrows, self.nbv + np.arange(self.delta.matrix.shape[0], dtype=np.int64)])
            rows, sims = self.vec_pos[vrows], self.vectors(vrows) @ qvec
        return smoothed_top(rows, sims, want, context, self.prev, self.next, lambda p: self.similarities(qvec, p))

    def _all_scored(self, qvec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row positions, cosines) of every live vector: one matmul over the mapped base and the delta."""
        base = np.asarray(self.gen.arrays["vectors"]) @ qvec if self.nbv else np.zeros(0, np.float32)
        scored = np.concatenate([base, self.delta.matrix @ qvec]).astype(np.float32)
        live = np.ones(len(scored), bool)
        live[: self.nbv] = ~self.dead_vec
        vrows = np.flatnonzero(live)
        return self.vec_pos[vrows], scored[vrows]

    def _base_candidates(self, qvec: np.ndarray, want: int) -> np.ndarray:
        """Live base vector rows that may be among the best `want`: the ANN graph's top candidates, or all."""
        if self.nbv == 0:
            return np.zeros(0, np.int64)
        if self.gen.ann is None:
            sims = np.asarray(self.gen.arrays["vectors"]) @ qvec
            sims[self.dead_vec] = -np.inf
            k = min(max(want, ANN_RESCORE), self.nbv)
            top = np.argpartition(-sims, k - 1)[:k] if k < self.nbv else np.arange(self.nbv)
        else:
            k = min(max(2 * want, ANN_RESCORE) + self.n_dead_vec, self.nbv)
            # asked for every vector: a graph search (approximate) could only drop some, so take them all
            if k >= self.nbv:
                top = np.arange(self.nbv)
            else:
                top = vector_rows(self.gen.ann_rows, self.gen.ann.search(qvec, k, exact=False).keys)
        top = top[top >= 0]
        return np.sort(top[~self.dead_vec[top]])

    def lexical_scores(self, query: str, context: Context = NO_CONTEXT) -> np.ndarray:
        scores = bm25_corpus_scores([self.gen.postings, self._delta_postings], tokenize(query), [self.dead, None],
                                    self._norms, self.live_rows())
        if any(context) and scores.size:
            scores = scores + context[0] * gather(scores, self.prev) + context[1] * gather(scores, self.next)
        return scores


def _current(path: Path) -> str:
    try:
        return (path / "CURRENT").read_text().strip()
    except OSError:
        raise IndexNotPublished(f"no index at {path.name} (never published)") from None


class PersistedCache:
    """Per process: the mapped generation of each (store, tenant, table, model, dim) and its current delta."""

    def __init__(self) -> None:
        self._gens: dict[tuple, tuple[str, Generation]] = {}
        self._indexes: dict[tuple, PersistedTableIndex] = {}
        self._broken: dict[tuple, str] = {}
        self._warned: set[tuple] = set()
        self._lock = threading.Lock()
        self.loads = 0

    def get(self, con: db.Connection, settings: Any, table: str, user_id: str, model: str, dim: int,
            signature: tuple | None = None) -> PersistedTableIndex:
        """The published index with the store's newer rows merged in; IndexUnusable when there is none usable."""
        path = index_dir(settings, user_id, table, model, dim)
        key = (resolved(settings.db_path), user_id, table, model, dim)
        name = _current(path)
        with self._lock:
            if self._broken.get(key) == name:
                raise IndexUnusable(f"{table} index generation {name} was found stale in this process")
            held = self._gens.get(key)
        if held is None or held[0] != name:
            gen = Generation(path / name, user_id, table, model, dim)
            self._or_broken(key, name, check_against_store, con, gen, table, user_id)
            with self._lock:
                self._gens[key] = (name, gen)
                self._indexes.pop(key, None)
                self.loads += 1
        else:
            gen = held[1]
        if signature is None:
            signature = table_signature(con, table, user_id)
        with self._lock:
            index = self._indexes.get(key)
        if index is not None and index.gen is gen and index.signature == signature:
            return index
        delta, columns = _delta(con, gen, table, user_id, model, dim, signature)
        index = PersistedTableIndex(gen, delta, columns, signature, key)
        if index.live_rows() != signature[0]:
            self._or_broken(key, name, _mask_deleted, con, index, table, user_id)
        with self._lock:
            self._indexes[key] = index
        return index

    def _or_broken(self, key: tuple, name: str, check: Any, *args: Any) -> None:
        """Run a check of generation `name`; when it finds the generation unusable, search exactly until a
        publish writes a new one."""
        try:
            check(*args)
        except IndexUnusable:
            with self._lock:
                self._broken[key] = name
            raise

    def first_warning(self, key: tuple) -> bool:
        """True the first time a fallback reason is seen in this process (one warning, not one per query)."""
        with self._lock:
            if key in self._warned:
                return False
            self._warned.add(key)
            return True

    def clear(self) -> None:
        with self._lock:
            self._warned.clear()
            self._gens.clear()
            self._indexes.clear()
            self._broken.clear()


def _delta(con: db.Connection, gen: Generation, table: str, user_id: str, model: str, dim: int,
           signature: tuple) -> tuple[TableIndex, pa.Table]:
    """The rows the generation does not hold as they are now (stored after it, updated since, or
    unembedded then) and their search columns, in the same order."""
    max_rowid = gen.manifest["max_rowid"]
    params = {"user_id": user_id, "model": model, "dim": dim}
    rows = db.query_arrow(con, f"queries/query_index_delta_{table}", **params,
                          max_rowid=-1 if max_rowid is None else max_rowid, covered=gen.covered)
    pending = [str(x) for x in gen.arrays["pending"]]
    if pending:  # a separate, rarer query: an id list in the same filter would make DuckDB read every row
        earlier = db.query_arrow(con, f"queries/query_index_pending_{table}", **params, pending=pending)
        # an update can move a row to a new rowid: then it is in both sets, and counts once
        moved = np.isin(np.asarray(earlier["id"].to_pylist(), dtype=object), rows["id"].to_pylist())
        earlier = earlier.filter(pa.array(~moved))
        rows = pa.concat_tables([earlier, rows.cast(earlier.schema)])
    return index_of_rows(rows, table, dim, signature), rows.select(list(gen.columns.column_names))


def _mask_deleted(con: db.Connection, index: PersistedTableIndex, table: str, user_id: str) -> None:
    """Mask the generation's rows deleted from the store since it was written (the store counts fewer
    rows than the generation and the delta hold); IndexUnusable when the counts still disagree."""
    check_against_store(con, index.gen, table, user_id)  # rowids still name the same rows (no compaction)
    live = np.asarray([r for (r,) in db.rows(con, f"queries/index_live_rowids_{table}", user_id=user_id,
                                                max_rowid=-1 if index.gen.manifest["max_rowid"] is None
                                                else index.gen.manifest["max_rowid"])], dtype=np.int64)
    base_rowids = np.asarray(index.gen.arrays["rowids"])
    gone = np.flatnonzero(~np.isin(base_rowids, live))
    if len(gone):
        index.mark_dead(gone)
    if index.live_rows() != index.signature[0]:
        raise IndexUnusable(f"{table} index: stale (the store holds {index.signature[0]} rows, the index "
                            f"and its delta {index.live_rows()})")


PERSISTED = PersistedCache()


def table_index(con: db.Connection, settings: Any, table: str, user_id: str, model: str, dim: int,
                signature: tuple | None = None) -> TableIndex:
    """The index a search of (tenant, table) uses: the published one with the delta merged in, or, when
    there is none usable (or settings.search_index is off), the exact in-memory one (`signature`: the
    table's signature row when the caller has just read it)."""
    from engram.query.vector_index import CACHE

    if settings.search_index and table in ("episodes", "facts"):
        try:
            return PERSISTED.get(con, settings, table, user_id, model, dim, signature)
        except IndexNotPublished:
            # normal for a table below search_index_min_rows; a warning only where publish would write one
            signature = signature or table_signature(con, table, user_id)
            if signature[0] >= settings.search_index_min_rows and PERSISTED.first_warning(
                    (str(settings.db_path), user_id, table, model, dim, "never published")):
                log.warning("%s index never published; searching exactly (the next publish writes it)", table)
        except IndexUnusable as exc:
            if PERSISTED.first_warning((str(settings.db_path), user_id, table, model, dim, str(exc))):
                log.warning("%s; searching exactly (the next publish writes the index)", exc)
    return CACHE.get(con, settings.db_path, table, user_id, model, dim, signature)
