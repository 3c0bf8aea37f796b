"""An overlong "word" (a base64 blob, a minified file) costs a bounded amount in the search index, and a
budget counts it as a reader's tokenizer would (issue: one long word took the process down)."""

from __future__ import annotations

import random
import string
import tracemalloc

from engram.index.bm25 import BM25, postings
from engram.query.wordpiece import count_tokens, truncate_to_tokens
from engram.text.tokens import MAX_SEARCH_TOKEN_CHARS, tokenize

rng = random.Random(7)
BLOB = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(200_000))
WORDS = " ".join(f"word{i} about hiking in the hills" for i in range(500))


def test_an_overlong_word_is_cut_to_a_bounded_search_token() -> None:
    tokens = tokenize(f"here is the key {BLOB} end")
    assert max(len(t) for t in tokens) == MAX_SEARCH_TOKEN_CHARS
    assert tokenize(BLOB) == [BLOB.lower()[:MAX_SEARCH_TOKEN_CHARS]]


def test_postings_of_a_long_word_allocate_per_distinct_term_not_per_token() -> None:
    # the old build made one fixed-width string array of every token, each as wide as the longest
    # (here 4 bytes x 200,000 characters x ~2,000 tokens = 1.6 GB)
    docs = [list(WORDS.split()) + [BLOB], list(WORDS.split())]
    tracemalloc.start()
    try:
        arrays = postings(docs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024
    assert BLOB[:MAX_SEARCH_TOKEN_CHARS] in set(arrays["bm25_terms"].tolist())


def test_a_query_holding_the_same_blob_finds_its_memory() -> None:
    docs = [tokenize(t) for t in ["I like tea", f"the key is {BLOB}", "hiking in the hills"]]
    scores = BM25(docs).score(tokenize(BLOB))
    assert int(scores.argmax()) == 1 and scores[1] > 0


def test_a_budget_counts_an_overlong_word_by_its_length() -> None:
    # WordPiece alone reads a 100+ character run as one [UNK]: a 1 MB blob would pass as one token
    assert count_tokens(BLOB) >= len(BLOB) // 3
    cut = truncate_to_tokens(f"key {BLOB} end", 100)
    assert cut.startswith("key ") and count_tokens(cut) <= 100 and len(cut) > 200
