"""A published generation of a table's index, memory-mapped read-only and checked whole before use."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from engram.index.ann_graph import GRAPH_FILE, ROWS_FILE
from engram.index.bm25 import POSTING_LENGTHS, ROW_FIRST, Postings
from engram.index.disk import (
    ARRAYS,
    COLUMNS_FILE,
    FORMAT,
    HALF_VECTORS,
    LINKS_FILE,
    MOMENT_ORDER,
    SORTED_MOMENTS,
    IndexUnusable,
    read_manifest,
)
from engram.index.windows import row_moments, sorted_in_windows, sorted_ranges

ANN_EXPANSION_SEARCH = 1024  # nodes a query visits in the graph (engram.index.writer has the other parameters)


class Generation:
    """One published generation, memory-mapped read-only."""

    def __init__(self, path: Path, user_id: str, table: str, model: str, dim: int) -> None:
        try:
            manifest = read_manifest(path)
        except (OSError, ValueError) as exc:
            raise IndexUnusable(f"{table} index: unreadable manifest ({type(exc).__name__})") from None
        if manifest.get("format") != FORMAT:  # written by another engram: rebuilt by the next publish
            raise IndexUnusable(f"{table} index: format {manifest.get('format')}, this engram reads {FORMAT}")
        expect = {"user_id": user_id, "table": table, "model": model, "dim": dim}
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
            if manifest["ann"]:  # the float16 vectors of a generation with a graph
                self.arrays[HALF_VECTORS] = np.asarray(
                    np.load(path / f"{HALF_VECTORS}.npy", mmap_mode="r", allow_pickle=False))
        except (OSError, ValueError, KeyError) as exc:
            raise IndexUnusable(f"{table} index: unreadable arrays ({type(exc).__name__})") from None
        n = len(self.arrays["rowids"])
        shapes = {"vectors": (manifest["vectors"], dim), HALF_VECTORS: (manifest["vectors"], dim),
                  SORTED_MOMENTS: (n,), MOMENT_ORDER: (n,), POSTING_LENGTHS: self.arrays["bm25_docs"].shape,
                  ROW_FIRST: (n + 1,)}
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
        self.ann_rows = np.zeros(0, np.int64)  # graph key -> vector row (engram.index.ann_graph)
        self._moments: np.ndarray | None = None
        if manifest["ann"]:
            from usearch.index import Index

            try:
                self.ann = Index.restore(str(path / GRAPH_FILE), view=True)
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

    @cached_property
    def links(self) -> tuple[np.ndarray, np.ndarray] | None:
        """A facts generation's (episode ids sorted, fact ids) links, or None when it holds none."""
        path = self.path / LINKS_FILE
        if self.manifest["table"] != "facts" or not path.exists():
            return None
        try:
            table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise IndexUnusable(f"facts index: unreadable links ({type(exc).__name__})") from None
        return (np.asarray(table["episode_id"].to_pylist(), dtype=str),
                np.asarray(table["fact_id"].to_pylist(), dtype=object))

    def facts_of(self, episode_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(episode_id, fact_id) for the episodes, from a facts generation's links."""
        links = self.links
        if links is None or not len(episode_ids):
            return []
        keys, facts = links
        out = []
        for episode_id in sorted(set(episode_ids)):
            lo, hi = np.searchsorted(keys, episode_id, "left"), np.searchsorted(keys, episode_id, "right")
            out.extend((episode_id, str(f)) for f in facts[lo:hi])
        return out

    def graph(self, expansion: int) -> Any:
        """A view of the ANN graph of its own searched at `expansion` (the shared one keeps the query
        search's), or None when the generation has no graph. Not kept by the generation: a night's two
        searches would save ~0.4 s of making it again, but its pages would stay resident (~230 MB at 1M)."""
        if self.ann is None:
            return None
        from usearch.index import Index

        view = Index.restore(str(self.path / GRAPH_FILE), view=True)
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
        return sorted_in_windows(self.arrays[SORTED_MOMENTS], self.arrays[MOMENT_ORDER], windows)

    def count_dated(self, windows: Sequence[Any]) -> int:
        """How many rows, dead or alive, are dated inside any of the windows (no row listed)."""
        return sum(hi - lo for lo, hi in sorted_ranges(self.arrays[SORTED_MOMENTS], windows))

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
