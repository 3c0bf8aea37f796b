"""Similar-pair search of the nightly stages over a tenant's active facts.

With a published facts index (engram.query.persisted) the store's vectors are never read into memory:
the graph proposes candidates for each query vector, the ones near the threshold are rescored exactly
(float32, memory-mapped), the facts stored since the publish (the delta) are compared exactly, and a
query whose graph neighbours are all still near the threshold is searched exactly over every vector,
so a pair above the threshold is missed only when the graph misses a close neighbour while ranking
farther ones first. Without a usable index it is one exact matmul, as before.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from engram.consolidate.merge_plan import similar_pairs
from engram.query.persisted import PERSISTED, IndexUnusable, PersistedTableIndex
from engram.store import db

log = logging.getLogger(__name__)

GRAPH_K = 48       # graph neighbours asked per query vector
MARGIN = 0.04      # graph (quantised) cosines this far below the threshold are rescored exactly
CHUNK = 4096       # query vectors per graph batch (bounds the candidate gather)


@dataclass
class FactSpace:
    """The vectors of a frame of active facts (frame row order): in memory, or behind a published index."""

    n: int
    exact: np.ndarray | None = None            # [n, dim] vectors in frame order (no index)
    index: PersistedTableIndex | None = None
    vrow: np.ndarray | None = None             # frame row -> index vector row
    frame_of_vrow: np.ndarray | None = None    # index vector row -> frame row, -1 = not in the frame

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
        """All (query row, frame row, cos) with cos > threshold, like merge_plan.similar_pairs."""
        if self.exact is not None:
            return similar_pairs(query, self.exact, threshold)
        assert self.index is not None and self.frame_of_vrow is not None
        index, f_of = self.index, self.frame_of_vrow
        out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        nd = int(index.delta.matrix.shape[0])
        if nd and len(query):
            qi, dj, sim = similar_pairs(query, index.delta.matrix, threshold)
            out.append((qi, index.nbv + dj, sim))
        if index.nbv and len(query):
            out.extend(self._base_pairs(query, threshold))
        if not out:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
        qi = np.concatenate([o[0] for o in out])
        fr = f_of[np.concatenate([o[1] for o in out])]
        sim = np.concatenate([o[2] for o in out]).astype(np.float32)
        keep = fr >= 0  # dead copies, and facts no longer active, are not in the frame
        return qi[keep], fr[keep], sim[keep]

    def _base_pairs(self, query: np.ndarray, threshold: float) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        index = self.index
        assert index is not None
        base = index.gen.arrays["vectors"]
        if index.gen.ann is None:
            return [similar_pairs(query, base, threshold)]
        out = []
        k = min(GRAPH_K, index.nbv)
        saturated: list[np.ndarray] = []
        for start in range(0, len(query), CHUNK):
            q = np.ascontiguousarray(query[start:start + CHUNK], dtype=np.float32)
            found = index.gen.ann.search(q, k, threads=os.cpu_count() or 1)
            keys = np.asarray(found.keys).reshape(len(q), -1).astype(np.int64)
            approx = 1.0 - np.asarray(found.distances).reshape(len(q), -1)
            counts = np.asarray(found.counts).reshape(len(q))
            valid = np.arange(keys.shape[1])[None, :] < counts[:, None]
            full = (counts >= k) & (approx[:, -1] >= threshold - MARGIN)
            saturated.append(start + np.flatnonzero(full))
            qi, kj = np.nonzero(valid & (approx >= threshold - MARGIN) & ~full[:, None])
            if len(qi):
                vr = keys[qi, kj]
                order = np.argsort(vr, kind="stable")  # sorted reads of the memory map
                vecs = np.empty((len(vr), base.shape[1]), np.float32)
                vecs[order] = base[vr[order]]
                sims = np.einsum("ij,ij->i", vecs, q[qi])
                hit = sims > threshold
                out.append((start + qi[hit], vr[hit], sims[hit]))
        rest = np.concatenate(saturated) if saturated else np.zeros(0, np.int64)
        if len(rest):
            log.info("pair search: %d query vector(s) searched exactly (dense neighbourhood)", len(rest))
            qi, vr, sims = similar_pairs(query[rest], base, threshold)
            out.append((rest[qi], vr, sims))
        return out


def load_facts(settings: Any, con: db.Connection, user_id: str, model: str, dim: int) -> tuple[pa.Table, FactSpace]:
    """The tenant's active facts (no vectors column) and their FactSpace: the published index when it
    covers them, else their vectors read from the store (with one warning saying why)."""
    if settings.search_index and settings.nightly_pair_index:
        try:
            index = PERSISTED.get(con, settings, "facts", user_id, model, dim)
            arrow = db.query_arrow(con, "queries/tenant_fact_rows", user_id=user_id, model=model, dim=dim)
            space = FactSpace.from_index(index, arrow["id"].to_pylist(), arrow["row_id"].to_numpy())
            return arrow.drop_columns(["row_id"]), space
        except IndexUnusable as exc:
            log.warning("%s; pair search reads every fact vector (the next publish writes the index)", exc)
    arrow = db.query_arrow(con, "queries/tenant_fact_vectors", user_id=user_id, model=model, dim=dim)
    vecs = _vectors(arrow["embedding"], dim)
    return arrow.drop_columns(["embedding"]), FactSpace(n=arrow.num_rows, exact=vecs)


def _vectors(column: pa.ChunkedArray, dim: int) -> np.ndarray:
    arr = column.combine_chunks()
    if len(arr) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(arr), dim)
