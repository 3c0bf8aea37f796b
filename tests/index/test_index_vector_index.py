"""The in-memory vector index: exact and sketch paths, session-neighbour context."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engram.index import vector_index
from engram.index.vector_index import TableIndex, _neighbours


def make_index(matrix: np.ndarray, sessions: list[str | None] | None = None, has=None,
               texts: list[str] | None = None) -> TableIndex:
    n = matrix.shape[0]
    has = np.ones(n, dtype=bool) if has is None else np.asarray(has)
    vec_pos = np.flatnonzero(has)
    vec_row = np.full(n, -1)
    vec_row[vec_pos] = np.arange(len(vec_pos))
    texts = texts or ["x?"] * n  # every row asks: each row borrows from the row before it
    prev, nxt = _neighbours(sessions or [None] * n, texts)
    return TableIndex("episodes", (), ("test",), np.arange(n), [f"r{i}" for i in range(n)], pa.array(texts, pa.string()),
                      np.ascontiguousarray(matrix[has]), vec_row, vec_pos, prev, nxt)


def unit_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_neighbours_stay_inside_a_session():
    prev, nxt = _neighbours(["a", "a", "b", None, None], ["q?"] * 5)
    assert prev.tolist() == [-1, 0, -1, -1, -1]
    assert nxt.tolist() == [1, -1, -1, -1, -1]


def test_vector_top_is_exact_and_skips_rows_without_vectors():
    m = unit_rows(50, 16)
    idx = make_index(m, has=[i % 5 != 0 for i in range(50)])
    q = m[11]
    rows, scores = idx.vector_top(q, 5)
    assert rows[0] == 11 and scores[0] > 0.999
    assert all(r % 5 != 0 for r in rows)
    assert np.all(np.diff(scores) <= 0)
    assert idx.similarities(q, np.array([10, 11]))[0] == 0.0


def test_context_lifts_the_neighbour_of_a_strong_match():
    m = np.eye(6, 8, dtype=np.float32)
    idx = make_index(m, sessions=["s", "s", "s", "s", "t", "t"])
    rows, scores = idx.vector_top(m[3], 3, context=(0.5, 0.5))
    assert rows.tolist()[:2] == [3, 2]  # row 4 is in another session: it borrows nothing
    assert scores.tolist() == [1.0, 0.5, 0.0]


def test_context_weighs_the_row_before_and_the_row_after_apart():
    m = np.eye(6, 8, dtype=np.float32)
    idx = make_index(m, sessions=["s", "s", "s", "s", "t", "t"])
    _, scores = idx.vector_top(m[1], 3, context=(0.4, 0.1))
    assert scores.tolist() == pytest.approx([1.0, 0.4, 0.1])  # row 2 follows the match, row 0 precedes it
    rows, _ = idx.vector_top(m[1], 3, context=(0.4, 0.1))
    assert rows.tolist() == [1, 2, 0]
    assert idx.lexical_scores("nothing", (0.4, 0.1)).shape == (6,)


def test_a_row_borrows_from_the_row_before_only_when_that_row_asks():
    m = np.eye(4, 8, dtype=np.float32)
    idx = make_index(m, sessions=["s"] * 4, texts=["Where did you go?", "To Oslo.", "Nice trip.", "Thanks!"])
    assert idx.prev.tolist() == [-1, 0, -1, -1]  # only the answer to the question links back
    assert idx.next.tolist() == [1, 2, 3, -1]
    rows, _ = idx.vector_top(m[2], 2, context=(0.5, 0.5))
    assert rows.tolist() == [2, 1]  # "To Oslo." borrows from the turn after it; "Thanks!" borrows nothing


def test_sketch_path_agrees_with_exact(monkeypatch):
    m = unit_rows(3000, 64, seed=1)
    q = m[7] + 0.05 * unit_rows(1, 64, seed=2)[0]
    q /= np.linalg.norm(q)
    idx = make_index(m)
    exact, _ = idx.vector_top(q, 10)
    monkeypatch.setattr(vector_index, "EXACT_LIMIT", 100)
    monkeypatch.setattr(vector_index, "SKETCH_RESCORE", 600)
    approx, _ = idx.vector_top(q, 10)
    assert approx[0] == exact[0] == 7
    assert len(set(approx) & set(exact)) >= 8


def test_an_agent_reply_borrows_nothing_from_the_request_before_it():
    texts = ["Can you plan my trip to Oslo?", "Sure. Day one: the fjord.", "Would you like hotels too?",
             "Yes, near the harbour.", "Which month?", "May."]
    roles = ["user", "assistant", "Assistant", "user", "user", "user"]
    prev, nxt = _neighbours(["s"] * 6, texts, roles)
    # the reply to the user's request stands alone; the user's answer to the agent's question borrows from it
    assert prev.tolist() == [-1, -1, -1, 2, -1, 4]
    assert nxt.tolist() == [1, 2, 3, 4, 5, -1]
    assert _neighbours(["s"] * 2, texts[:2])[0].tolist() == [-1, 0]  # no roles (facts): as before
