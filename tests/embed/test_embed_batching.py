"""MiniLM batching: length-sorted chunks, parallel runs and padding leave every vector as it was."""

from __future__ import annotations

import numpy as np
import pytest

from engram.embed import models
from engram.embed.queue import by_length

TEXTS = [
    "ok",
    "I am allergic to peanuts.",
    "The train to Berlin leaves at noon, and I still have to pack my bags and call my sister.",
    "hi",
    "My favourite colour is blue.",
    "We went hiking last weekend near the lake; the weather was great and the kids loved the picnic.",
    "Deploy failed again on Friday.",
    "a considerably longer sentence that needs padding of the other " * 3,
]

# Vectors of TEXTS[:3] from the code before issue 19 (2-thread ENABLE_ALL session, each text alone):
# the first 4 values, rounded to 6 places; the new options may differ by < 1e-6.
BEFORE = {
    0: [-0.049073, -0.070772, -0.024694, 0.00803],
    1: [0.009195, 0.001484, 0.028982, 0.035428],
    2: [0.053673, 0.071334, 0.001436, 0.084925],
}


@pytest.fixture(scope="module")
def minilm() -> models.MiniLMEmbedder:
    return models.MiniLMEmbedder()


@pytest.mark.parametrize(
    ("lengths", "size", "workers", "sizes"),
    [
        ([3, 1, 2], 16, 1, [3]),
        ([3, 1, 2], 16, 2, [2, 1]),
        ([5] * 64, 16, 2, [16, 16, 16, 16]),
        ([5] * 40, 16, 2, [10, 10, 10, 10]),
        ([7], 16, 2, [1]),
    ],
)
def test_length_chunks_are_even_and_cover_every_index(
    lengths: list[int], size: int, workers: int, sizes: list[int]
) -> None:
    chunks = models.length_chunks(lengths, size, workers)
    assert [len(c) for c in chunks] == sizes
    assert sorted(np.concatenate(chunks).tolist()) == list(range(len(lengths)))


def test_length_chunks_hold_similar_lengths() -> None:
    chunks = models.length_chunks([9, 1, 8, 2, 7, 3], 2)
    assert [[int(i) for i in c] for c in chunks] == [[1, 3], [5, 4], [2, 0]]


def test_queue_orders_rows_by_word_and_punctuation_count() -> None:
    rows = [("u", "a", "one two three"), ("u", "b", "hi!"), ("u", "c", "x")]
    assert [r[1] for r in by_length(rows)] == ["c", "b", "a"]


def test_a_text_gets_the_same_vector_alone_and_in_any_batch(minilm: models.MiniLMEmbedder) -> None:
    alone = np.vstack([minilm.embed([t]) for t in TEXTS])
    together = minilm.embed(TEXTS)
    shuffled = minilm.embed(TEXTS[::-1])[::-1]
    repeated = minilm.embed(TEXTS * 5)[: len(TEXTS)]  # more chunks, run by both workers
    for batch in (together, shuffled, repeated):
        assert np.abs(batch - alone).max() < 1e-6


def test_one_worker_and_two_workers_give_the_same_vectors(minilm: models.MiniLMEmbedder) -> None:
    before = minilm.workers
    two = minilm.embed(TEXTS * 5)
    minilm.workers = 1
    try:
        one = minilm.embed(TEXTS * 5)
    finally:
        minilm.workers = before
    assert np.abs(one - two).max() < 1e-6


def test_vectors_match_those_before_the_change(minilm: models.MiniLMEmbedder) -> None:
    got = minilm.embed(TEXTS[:3])
    for row, first in BEFORE.items():
        assert np.abs(got[row, :4] - first).max() < 2e-6
