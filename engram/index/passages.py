"""The lexical documents of an index's rows: one per passage of a long text, so BM25 reads a long message in full.

A row's text longer than one passage (engram.text.markup.passages: cut on paragraphs, headings and list
items, code blocks whole) is scored passage by passage and the row takes its best passage's score (max
pooling, engram.index.bm25.row_max). Scored whole, a long agent reply that holds the question's words in one paragraph was pushed
down by BM25's length normalisation; as passages it competes at the length of that paragraph. A short
text is one document, as before. Documents are in row order; `row_first` (CSR offsets, n_rows + 1) says
where each row's documents start, and every row has at least one (an empty text: an empty document).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from engram.text.markup import PASSAGE_WORDS, passages
from engram.text.tokens import tokenize

Tokens = Sequence[str]


@lru_cache(maxsize=65_536)
def cached_tokens(text: str) -> tuple[str, ...]:
    """tokenize(text), kept: an index of recent rows is rebuilt on every write, and its older rows (their
    passages) were tokenized before."""
    return tuple(tokenize(text))


def spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each passage of the text; the whole text when it is short (or blank)."""
    if len(text.split()) <= PASSAGE_WORDS:  # the common case, without a second pass over the text
        return [(0, len(text))]
    return passages(text) or [(0, len(text))]


def tokenized_passages(text: str, tokenize: Callable[[str], Tokens]) -> list[Tokens]:
    """The text's passages (spans), each tokenized."""
    cut = spans(text)
    if len(cut) == 1:
        return [tokenize(text)]
    return [tokenize(text[s:e]) for s, e in cut]


@lru_cache(maxsize=65_536)
def cached_passages(text: str) -> tuple[Tokens, ...]:
    """tokenized_passages with cached_tokens, kept: an index of recent rows is rebuilt on every write, and its
    older rows were cut before."""
    return tuple(tokenized_passages(text, cached_tokens))


def passage_docs(texts: Sequence[str], tokenize: Callable[[str], Tokens]) -> tuple[list[Tokens], np.ndarray]:
    """Each row's passages as token lists, in row order, and the CSR offsets of each row's first one."""
    return _docs(texts, lambda text: tokenized_passages(text, tokenize))


def cached_passage_docs(texts: Sequence[str]) -> tuple[list[Tokens], np.ndarray]:
    """passage_docs with cached_tokens, each text cut and tokenized once per process (cached_passages)."""
    return _docs(texts, cached_passages)


def _docs(texts: Sequence[str], passages_of: Callable[[str], Sequence[Tokens]]) -> tuple[list[Tokens], np.ndarray]:
    docs: list[Tokens] = []
    row_first = np.zeros(len(texts) + 1, np.int64)
    for r, text in enumerate(texts):
        docs.extend(passages_of(text))
        row_first[r + 1] = len(docs)
    return docs, row_first
