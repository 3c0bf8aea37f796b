"""Lexical documents per passage (engram.index.passages, engram.index.bm25): a long row is scored by its
best passage, in memory and on disk alike."""

from __future__ import annotations

import numpy as np
import pytest

from engram.index import bm25
from engram.index.bm25 import BM25, bm25_row_scores, docs_of_rows, postings, row_max
from engram.index.passages import passage_docs, spans
from engram.text.tokens import tokenize

FILLER = " ".join(["The plan covers the schedule, the budget and the review of every milestone."] * 12)
LONG = (f"## Overview\n\n{FILLER}\n\n## Hosting\n\n{FILLER}\n\n"
        "We will deploy the service on Kubernetes with three replicas behind an nginx ingress.\n")


def test_a_short_text_is_one_document_and_a_long_one_one_per_passage():
    docs, row_first = passage_docs(["a short note about tea", LONG, ""], tokenize)
    assert row_first.tolist()[:2] == [0, 1]
    assert row_first[2] - row_first[1] == len(spans(LONG)) > 2
    assert row_first[3] == len(docs) and docs[-1] == []  # an empty text is an empty document
    assert docs[0] == tokenize("a short note about tea")
    assert any(d == tokenize("We will deploy the service on Kubernetes with three replicas behind an nginx ingress.")
               for d in docs)


def test_a_long_row_scores_as_its_best_passage():
    rows = ["We talked about kubernetes replicas, the coffee machine, the office move, the new desks, the parking "
            "and the lunch menu for the team offsite next month", LONG, "tea", "garden", "cat"]
    docs, row_first = passage_docs(rows, tokenize)
    by_passage = BM25(docs, row_first).score(tokenize("kubernetes replicas"))
    whole = BM25([tokenize(t) for t in rows]).score(tokenize("kubernetes replicas"))
    assert by_passage.shape == (5,)
    # scored whole, the long reply's length pushed it under the short row; as passages its paragraph outranks it
    assert whole[1] < whole[0]
    assert by_passage[1] > by_passage[0] > 0
    doc_scores = bm25.bm25_corpus_scores([bm25.Postings(postings(docs, row_first))], tokenize("kubernetes replicas"),
                                         [None])
    assert by_passage[1] == pytest.approx(doc_scores[row_first[1]:row_first[2]].max())


def test_row_scores_over_parts_mask_dead_rows_and_match_one_corpus():
    texts = ["tea in the garden", LONG, "kubernetes at home", "a cat"]
    docs, row_first = passage_docs(texts, tokenize)
    a_docs, a_first = passage_docs(texts[:2], tokenize)
    b_docs, b_first = passage_docs(texts[2:], tokenize)
    parts = [bm25.Postings(postings(a_docs, a_first)), bm25.Postings(postings(b_docs, b_first))]
    query = tokenize("kubernetes garden")
    np.testing.assert_allclose(bm25_row_scores(parts, query, [None, None]), BM25(docs, row_first).score(query),
                               rtol=1e-5)
    dead = np.array([False, True])
    scores = bm25_row_scores(parts, query, [dead, None])
    assert scores[1] == 0 and scores[0] > 0 and scores[2] > 0


def test_row_max_and_docs_of_rows():
    first = np.array([0, 1, 4, 5])
    assert row_max(np.array([1.0, 0.5, 3.0, 2.0, 0.0], np.float32), first).tolist() == [1.0, 3.0, 0.0]
    assert docs_of_rows(np.array([False, True, False]), first).tolist() == [False, True, True, True, False]
    with pytest.raises(ValueError):
        postings([["a"], ["b"]], np.array([0, 0, 2]))  # a row without a document
