"""BM25 (engram.index.bm25) and the search tokenizer (engram.text.tokens)."""

from __future__ import annotations

import numpy as np
import pytest

from engram.index.bm25 import BM25
from engram.text.tokens import tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("What did Caroline research?", ["carolin", "research"]),
        ("Running, runs and ran!", ["run", "run", "ran"]),
        ("The adoption agencies", ["adopt", "agenc"]),
        ("", []),
    ],
)
def test_tokenize_stems_and_drops_stopwords(text, tokens):
    assert tokenize(text) == tokens


def test_bm25_prefers_rare_terms_and_shorter_documents():
    docs = [tokenize(t) for t in [
        "the cat sat on the mat",
        "the cat",
        "a dog barked at the mailman all morning long",
        "zebra",
    ]]
    bm = BM25(docs)
    cat = bm.score(tokenize("cat"))
    assert cat[1] > cat[0] > 0 and cat[2] == 0 and cat[3] == 0
    both = bm.score(tokenize("cat zebra"))
    assert both[3] > both[1]  # zebra is rarer than cat
    assert bm.score(tokenize("unicorn")).tolist() == [0.0, 0.0, 0.0, 0.0]


def test_bm25_empty_corpus():
    bm = BM25([])
    assert bm.score(["x"]).shape == (0,)
    assert np.all(BM25([[]]).score(["x"]) == 0)


def test_scanned_postings_score_as_built_ones() -> None:
    """The delta's postings found by scanning at query time give the hits and scores built postings give,
    alone and read as one corpus with a generation's postings."""
    from engram.index.bm25 import Postings, ScannedPostings, bm25_corpus_scores, postings

    base = [["heron", "nest", "river"], ["otter", "swim"], ["heron", "heron", "fish"]]
    delta = [["kingfisher", "dive", "river"], ["heron", "river", "river", "bank"], []]
    row_first = np.array([0, 1, 3])  # the second row is two passages
    built, scanned = Postings(postings(delta, row_first)), ScannedPostings(delta, row_first)
    for term in ("river", "heron", "absent"):
        for a, b in zip(built.hit(term), scanned.hit(term), strict=True):
            assert np.array_equal(np.asarray(a), np.asarray(b)), term
    assert (scanned.n, scanned.n_rows, scanned.total_length) == (built.n, built.n_rows, built.total_length)
    gen = Postings(postings(base))
    query = ["heron", "river", "bank"]
    assert np.allclose(bm25_corpus_scores([gen, built], query, [None, None]),
                       bm25_corpus_scores([gen, scanned], query, [None, None]))
    with pytest.raises(ValueError, match="row_first"):
        ScannedPostings(delta, np.array([0, 2]))
