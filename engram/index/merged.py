"""A published generation and the delta read exactly from the store, searched as one index.

The delta (engram.index.delta) is the rows above the generation's watermark, rows updated since it was
written and rows that had no vector then; their old copies in the generation are masked, and so are
rows deleted from the store since. So a deleted, merged, deprecated or forgotten row never comes back,
and a search filters its candidates without reading the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from engram.index.ann_graph import vector_rows
from engram.index.bm25 import ScannedPostings, bm25_row_scores, docs_of_rows
from engram.index.generation import Generation
from engram.index.passages import cached_passage_docs
from engram.index.vector_index import (
    NO_CONTEXT,
    Context,
    TableIndex,
    gather,
    smoothed_top,
    text_list,
)
from engram.index.windows import in_windows, row_moments
from engram.text.tokens import tokenize

ANN_RESCORE = 100     # graph candidates rescored exactly per query, at least


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
        self._delta_postings = ScannedPostings(*cached_passage_docs(text_list(delta.texts)))
        self._count_dead()

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
        # the live lexical documents (a long row is one per passage): BM25's document count
        dead_docs = int(docs_of_rows(self.dead, self.gen.postings.row_first).sum()) if self.n_dead else 0
        self.live_docs = self.gen.postings.n - dead_docs + self._delta_postings.n

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
        scores = bm25_row_scores([self.gen.postings, self._delta_postings], tokenize(query), [self.dead, None],
                                 self.live_docs)
        if any(context) and scores.size:
            scores = scores + context[0] * gather(scores, self.prev) + context[1] * gather(scores, self.next)
        return scores
