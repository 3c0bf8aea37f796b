"""The ANN graph of a published generation (usearch HNSW), carried over from one publish to the next.

A graph node's key is stable across generations; `ann_rows.npy` maps each key to the generation's
vector row (-1: removed). Publish reuses the previous generation's graph when it can: a node whose row
(same rowid and id) still holds the same vector keeps its key, nodes of rows deleted or re-embedded are
removed, and only the new vectors are inserted. A night that adds 10k rows to a 1M-row table then
inserts 10k nodes instead of building 1M (bench/perf/CONSOLIDATE.md). The graph is built afresh when there
is no previous one (or it is of another format), its parameters differ, or removed nodes pass REBUILD_REMOVED of the live ones
(searches walk over removed nodes, and too many of them cost recall).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engram.index.disk import FORMAT, read_manifest

log = logging.getLogger(__name__)

GRAPH_FILE = "ann.usearch"
ROWS_FILE = "ann_rows.npy"
REBUILD_REMOVED = 0.2
COMPARE_CHUNK = 65_536  # vectors compared per step when checking a row's vector is unchanged


@dataclass(frozen=True)
class GraphParams:
    """What a graph is built with; a previous graph is reused only with the same."""

    dim: int
    dtype: str
    connectivity: int
    expansion_add: int

    def new(self) -> Any:
        from usearch.index import Index

        return Index(ndim=self.dim, metric="ip", dtype=self.dtype, connectivity=self.connectivity,
                     expansion_add=self.expansion_add)

    def as_manifest(self) -> dict[str, Any]:
        return {"ann_dtype": self.dtype, "ann_connectivity": self.connectivity, "ann_expansion_add": self.expansion_add}


def vector_rows(ann_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Vector rows of graph keys; a key the search padded with, or one removed, gives -1."""
    keys = np.asarray(keys).astype(np.int64)
    rows = np.full(keys.shape, -1, np.int64)
    ok = (keys >= 0) & (keys < len(ann_rows))
    rows[ok] = ann_rows[keys[ok]]
    return rows


def write_graph(out: Path, params: GraphParams, matrix: np.ndarray, vec_rowids: np.ndarray, vec_ids: np.ndarray,
                previous: Path | None, save: Any) -> dict[str, Any]:
    """Write the graph of `matrix` (vector rows with their store rowids and ids) and its key map into `out`.

    `previous` is the live generation's directory (None: none); `save(path, array)` writes an array
    durably. Returns manifest fields: how the graph was made and how many removed nodes it carries.
    """
    threads = os.cpu_count() or 1
    n_vec = int(matrix.shape[0])
    carried = _carry_over(previous, params, matrix, vec_rowids, vec_ids)
    if carried is None:
        graph, keys, removed, how = params.new(), np.arange(n_vec, dtype=np.int64), 0, "built"
        graph.add(keys.astype(np.uint64), matrix, threads=threads)
    else:
        graph, keys, gone, removed_before, next_key = carried
        if gone.size:
            graph.remove(gone.astype(np.uint64))
        fresh = np.flatnonzero(keys < 0)
        keys[fresh] = next_key + np.arange(len(fresh))
        if fresh.size:
            graph.add(keys[fresh].astype(np.uint64), matrix[fresh], threads=threads)
        removed, how = removed_before + int(gone.size), f"reused ({len(fresh)} added, {gone.size} removed)"
    graph.save(str(out / GRAPH_FILE))
    ann_rows = np.full(int(keys.max()) + 1 if n_vec else 0, -1, np.int64)
    ann_rows[keys] = np.arange(n_vec)
    save(out / ROWS_FILE, ann_rows)
    log.info("ANN graph %s: %d vectors", how, n_vec)
    return {"ann_graph": how, "ann_removed": removed, **params.as_manifest()}


def _carry_over(previous: Path | None, params: GraphParams, matrix: np.ndarray, vec_rowids: np.ndarray,
                vec_ids: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, int, int] | None:
    """(graph loaded from the previous generation, key per new vector row (-1: to add), keys to remove,
    removed nodes it already carries, first free key), or None when it cannot or should not be reused."""
    if previous is None:
        return None
    try:
        manifest = read_manifest(previous)
        if manifest.get("format") != FORMAT or not manifest.get("ann") or any(manifest.get(k) != v for k, v in params.as_manifest().items()):
            return None
        old_rows = np.load(previous / ROWS_FILE, allow_pickle=False)
        arrays = {k: np.load(previous / f"{k}.npy", mmap_mode="r", allow_pickle=False)
                  for k in ("rowids", "ids", "vec_pos", "vectors")}
    except (OSError, ValueError, KeyError):
        return None
    old_pos = np.asarray(arrays["vec_pos"])
    old_rowids, old_ids = np.asarray(arrays["rowids"])[old_pos], np.asarray(arrays["ids"])[old_pos]
    key_of_old = np.full(len(old_pos), -1, np.int64)
    live = np.flatnonzero(old_rows >= 0)
    key_of_old[old_rows[live]] = live
    # a new vector row keeps the key of the old one with its rowid, id and vector
    order = np.argsort(old_rowids, kind="stable")
    at = np.minimum(np.searchsorted(old_rowids[order], vec_rowids), max(len(order) - 1, 0))
    cand = order[at] if len(order) else np.zeros(len(vec_rowids), np.int64)
    same = np.zeros(len(vec_rowids), bool)
    if len(order):
        same = (old_rowids[cand] == vec_rowids) & (old_ids[cand] == vec_ids)
    old_vectors = arrays["vectors"]
    for start in range(0, len(same), COMPARE_CHUNK):
        part = slice(start, start + COMPARE_CHUNK)
        rows = np.flatnonzero(same[part]) + start
        if rows.size:
            same[rows] = np.all(np.asarray(old_vectors[cand[rows]]) == matrix[rows], axis=1)
    keys = np.where(same, key_of_old[cand], -1)
    # live is sorted and distinct (flatnonzero): np.setdiff1d's answer without its np.unique (~1.3 s at 1M here)
    gone = live[~np.isin(live, keys[keys >= 0])]
    removed = int(manifest.get("ann_removed", 0)) + int(gone.size)
    if removed > REBUILD_REMOVED * max(len(matrix), 1):
        return None
    from usearch.index import Index

    try:
        graph = Index.restore(str(previous / GRAPH_FILE))
    except Exception:  # usearch raises RuntimeError/ValueError on a bad file: build afresh
        return None
    if graph is None or len(graph) != len(live) or graph.ndim != params.dim or graph.connectivity != params.connectivity:
        return None
    graph.expansion_add = params.expansion_add
    return graph, keys, gone, int(manifest.get("ann_removed", 0)), len(old_rows)
