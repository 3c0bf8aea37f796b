"""Similar-pair search of the nightly stages over a tenant's active facts.

Each query vector (a new episode or fact) is paired with its PAIR_K nearest active facts above the
threshold, on both paths: a new statement is compared with the facts closest to it, not with every
fact of a dense neighbourhood (a store of near-copies would otherwise yield millions of pairs a night).
With a published facts index (engram.index) the store's vectors are never read into memory:
the graph, searched at PAIR_EXPANSION, proposes GRAPH_K candidates per query vector, each rescored
with the generation's float16 copy of the vectors (memory-mapped, half the pages of float32; a cosine
moves by less than 1e-3; the i8 graph's inner-product distances are not cosines on a fixed scale, so
they cannot cut candidates), and the facts stored since the publish (the delta) are compared
exactly. A pair the exact path finds is missed when the graph misses one of a query's nearest facts,
or when facts no longer active (superseded, merged, deprecated, deleted since the publish), which the
graph still holds, take more than GRAPH_K - PAIR_K of its candidates. Without a usable index it is one
exact matmul.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from engram.consolidate.fact_keys import KEYS_VERSION
from engram.consolidate.merge_plan import similar_pairs, top_per_row
from engram.index.ann_graph import vector_rows
from engram.index.cache import PERSISTED
from engram.index.disk import HALF_VECTORS, IndexNotPublished, IndexUnusable
from engram.index.merged import PersistedTableIndex
from engram.index.vector_index import table_signature
from engram.store import db

log = logging.getLogger(__name__)

PAIR_K = 16           # nearest facts above the threshold kept per query vector (both paths)
GRAPH_K = 32          # graph candidates per query vector, rescored exactly before the top PAIR_K are kept
PAIR_EXPANSION = 128  # graph search breadth (bench/perf/CONSOLIDATE.md)
CHUNK = 1024          # query vectors per graph batch (bounds the candidate gather: 1024 x 32 x 384 floats)


@dataclass
class FactSpace:
    """The vectors of a frame of active facts (frame row order): in memory, or behind a published index."""

    n: int
    exact: np.ndarray | None = None            # [n, dim] vectors in frame order (no index)
    index: PersistedTableIndex | None = None
    vrow: np.ndarray | None = None             # frame row -> index vector row
    frame_of_vrow: np.ndarray | None = None    # index vector row -> frame row, -1 = not in the frame
    # graph candidates of each query vector searched so far, (vector rows, cosines): a new fact that is
    # its episode's whole text has the episode's vector, and is not searched a second time
    candidates: dict[bytes, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def from_index(cls, index: PersistedTableIndex, ids: list[str], rowids: np.ndarray) -> FactSpace:
        """Map the frame onto the index by rowid, checking each id; IndexUnusable if any fact is not covered."""
        alive = np.ones(index.n, bool)
        alive[: index.nb][index.dead] = False
        cand = np.flatnonzero(alive)
        order = np.argsort(index.rowids[cand], kind="stable")
        sorted_rowids = index.rowids[cand][order]
        rowids = np.asarray(rowids, dtype=np.int64)
        j = np.minimum(np.searchsorted(sorted_rowids, rowids), max(len(sorted_rowids) - 1, 0))
        if len(rowids) and (len(sorted_rowids) == 0 or not np.array_equal(sorted_rowids[j], rowids)):
            raise IndexUnusable("facts index does not cover every active fact (stale)")
        pos = cand[order[j]]
        base = pos < index.nb
        same = np.ones(len(pos), bool)
        frame_ids = np.asarray(ids, dtype=str)
        if base.any():
            same[base] = np.asarray(index.gen.arrays["ids"])[pos[base]] == frame_ids[base]
        for k in np.flatnonzero(~base):
            same[k] = index.ids[int(pos[k])] == ids[k]
        vrow = index.vec_row[pos]
        if not same.all() or (vrow < 0).any():
            raise IndexUnusable("facts index rows disagree with the store (stale)")
        frame_of_vrow = np.full(index.n_vectors, -1, np.int64)
        frame_of_vrow[vrow] = np.arange(len(vrow))
        return cls(n=len(ids), index=index, vrow=vrow, frame_of_vrow=frame_of_vrow)

    def vectors(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """float32 vectors of frame rows."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.exact is not None:
            return self.exact[rows]
        assert self.index is not None and self.vrow is not None
        return self.index.vectors(self.vrow[rows])

    def pairs(self, query: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, frame row, cos) of each query vector's PAIR_K nearest frame facts with cos > threshold."""
        if self.exact is not None:
            return similar_pairs(query, self.exact, threshold, top_k=PAIR_K)
        assert self.index is not None and self.frame_of_vrow is not None
        index = self.index
        out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if index.delta.matrix.shape[0] and len(query):
            qi, dj, sim = similar_pairs(query, index.delta.matrix, threshold)
            out.append((qi, index.nbv + dj, sim))
        if index.nbv and len(query):
            out.append(self._base_pairs(query, threshold))
        if not out:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
        qi = np.concatenate([o[0] for o in out])
        fr = self.frame_of_vrow[np.concatenate([o[1] for o in out])]
        sim = np.concatenate([o[2] for o in out]).astype(np.float32)
        keep = fr >= 0  # dead copies, and facts no longer active, are not in the frame
        return top_per_row(qi[keep], fr[keep], sim[keep], PAIR_K)

    def _base_pairs(self, query: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, index vector row, cos) above the threshold among the generation's vectors."""
        assert self.index is not None
        gen = self.index.gen
        # float16 copy where the generation has one: half the pages in memory; a cosine moves by < 1e-3
        base = gen.arrays.get(HALF_VECTORS, gen.arrays["vectors"])
        graph = gen.graph(PAIR_EXPANSION)
        if graph is None:  # a small generation: exact
            return similar_pairs(query, base, threshold)
        query = np.ascontiguousarray(query, dtype=np.float32)
        keys = [v.tobytes() for v in query]
        first: dict[bytes, int] = {}  # one search per distinct vector not searched before
        for j, key in enumerate(keys):
            if key not in self.candidates:
                first.setdefault(key, j)
        todo = list(first.values())
        k = min(GRAPH_K, self.index.nbv)
        for start in range(0, len(todo), CHUNK):
            q = query[todo[start:start + CHUNK]]
            found = graph.search(q, k, threads=os.cpu_count() or 1)
            rows = vector_rows(gen.ann_rows, np.asarray(found.keys).reshape(len(q), -1))
            counts = np.asarray(found.counts).reshape(len(q))
            valid = (np.arange(rows.shape[1])[None, :] < counts[:, None]) & (rows >= 0)
            rows[~valid] = 0  # a query with fewer neighbours than k: padding, read but dropped
            sims = np.einsum("qkd,qd->qk", base[rows].astype(np.float32, copy=False), q)  # every candidate rescored
            for j, r, c, ok in zip(todo[start:start + CHUNK], rows, sims, valid, strict=True):
                self.candidates[keys[j]] = (r[ok], c[ok])
        found_rows = [self.candidates[key] for key in keys]
        qi = np.repeat(np.arange(len(keys)), [len(r) for r, _ in found_rows])
        if not len(qi):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
        vr = np.concatenate([r for r, _ in found_rows])
        sims = np.concatenate([c for _, c in found_rows])
        hit = sims > threshold
        return qi[hit], vr[hit], sims[hit]


def load_facts(settings: Any, con: db.Connection, user_id: str, model: str, dim: int) -> tuple[pa.Table, FactSpace]:
    """The tenant's active facts (no vectors column) and their FactSpace: the published index when it
    covers them, else their vectors read from the store (with one warning saying why)."""
    if settings.search_index and settings.nightly_pair_index:
        try:
            index = PERSISTED.get(con, settings, "facts", user_id, model, dim)
            arrow = db.query_arrow(con, "queries/consolidate/tenant_fact_rows", user_id=user_id, model=model, dim=dim,
                                   keys_version=KEYS_VERSION)
            space = FactSpace.from_index(index, arrow["id"].to_pylist(), arrow["row_id"].to_numpy())
            return arrow.drop_columns(["row_id"]), space
        except IndexNotPublished as exc:
            # normal below search_index_min_rows, where publish writes no index: no warning every night
            n_facts = table_signature(con, "facts", user_id)[0]
            log.log(logging.WARNING if n_facts >= settings.search_index_min_rows else logging.DEBUG,
                    "%s; pair search reads every fact vector (the next publish writes the index)", exc)
        except IndexUnusable as exc:
            log.warning("%s; pair search reads every fact vector (the next publish writes the index)", exc)
    arrow = db.query_arrow(con, "queries/consolidate/tenant_fact_vectors", user_id=user_id, model=model, dim=dim,
                           keys_version=KEYS_VERSION)
    vecs = _vectors(arrow["embedding"], dim)
    return arrow.drop_columns(["embedding"]), FactSpace(n=arrow.num_rows, exact=vecs)


def _vectors(column: pa.ChunkedArray, dim: int) -> np.ndarray:
    arr = column.combine_chunks()
    if len(arr) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(arr), dim)
