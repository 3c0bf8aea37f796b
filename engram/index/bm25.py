"""Okapi BM25 over CSR postings, pure numpy: the lexical half of hybrid search, in memory and on disk."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from engram.text.tokens import MAX_SEARCH_TOKEN_CHARS

K1, B = 1.2, 0.75
# Each posting's document length, beside bm25_docs: BM25 reads it in order instead of gathering each
# document's norm.
POSTING_LENGTHS = "bm25_doc_lengths"
# Where each row's documents start (CSR offsets, rows + 1): a long row is several documents, its passages
# (engram.index.passages), and scores as the best of them.
ROW_FIRST = "bm25_row_first"
POSTING_ARRAYS = ("bm25_terms", "bm25_offsets", "bm25_docs", "bm25_tfs", "bm25_lengths", POSTING_LENGTHS, ROW_FIRST)


def postings(docs: Sequence[Sequence[str]], row_first: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """CSR postings of token lists: sorted terms, offsets into (docs, tfs, the docs' lengths), each
    doc's length, and where each row's docs start (`row_first`; default: one doc per row)."""
    lengths = np.fromiter((len(d) for d in docs), dtype=np.float32, count=len(docs))
    row_first = _row_first(len(docs), row_first)
    flat = [t for d in docs for t in d]
    if not flat:
        return {"bm25_terms": np.zeros(0, dtype="U1"), "bm25_offsets": np.zeros(1, np.int64),
                "bm25_docs": np.zeros(0, np.int32), "bm25_tfs": np.zeros(0, np.float32), "bm25_lengths": lengths,
                POSTING_LENGTHS: np.zeros(0, np.float32), ROW_FIRST: row_first}
    doc_of = np.repeat(np.arange(len(docs), dtype=np.int64), lengths.astype(np.int64))
    terms, term_id = _term_ids(flat)
    pair, tf = np.unique(term_id.astype(np.int64) * len(docs) + doc_of, return_counts=True)
    tid, doc = pair // len(docs), pair % len(docs)
    offsets = np.zeros(len(terms) + 1, np.int64)
    np.cumsum(np.bincount(tid, minlength=len(terms)), out=offsets[1:])
    return {"bm25_terms": terms, "bm25_offsets": offsets, "bm25_docs": doc.astype(np.int32),
            "bm25_tfs": tf.astype(np.float32), "bm25_lengths": lengths, POSTING_LENGTHS: lengths[doc],
            ROW_FIRST: row_first}


def bounded_term(term: str) -> str:
    """The term as the index holds it: cut to MAX_SEARCH_TOKEN_CHARS characters."""
    return term if len(term) <= MAX_SEARCH_TOKEN_CHARS else term[:MAX_SEARCH_TOKEN_CHARS]


def _term_ids(flat: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct terms, each token's index into them): memory per token is one integer, and the
    terms' fixed-width array is sized by the distinct terms only (a numpy string array of every token is
    as wide as the longest one, for every token); a term is at most MAX_SEARCH_TOKEN_CHARS wide, as the
    search tokenizer cuts it."""
    vocab: dict[str, int] = {}
    first_seen = np.fromiter((vocab.setdefault(bounded_term(t), len(vocab)) for t in flat), dtype=np.int64,
                             count=len(flat))
    distinct = np.array(list(vocab))
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return distinct[order], rank[first_seen]


def _row_first(n_docs: int, row_first: np.ndarray | None) -> np.ndarray:
    """Where each row's documents start (default: one document per row), checked: every row has at least
    one, and they add up to the documents."""
    row_first = np.arange(n_docs + 1, dtype=np.int64) if row_first is None else np.asarray(row_first, np.int64)
    if int(row_first[-1]) != n_docs or (np.diff(row_first) < 1).any():
        raise ValueError("row_first: every row needs at least one document, and they must add up to the docs")
    return row_first


class Postings:
    """Lookup side of `postings` (arrays in memory or memory-mapped)."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.terms = arrays["bm25_terms"]
        self.offsets = arrays["bm25_offsets"]
        self.docs = arrays["bm25_docs"]
        self.tfs = arrays["bm25_tfs"]
        self.lengths = arrays["bm25_lengths"]
        self.doc_lengths = arrays[POSTING_LENGTHS]
        self.row_first = arrays[ROW_FIRST]
        self.n = len(self.lengths)  # documents
        self.n_rows = len(self.row_first) - 1
        self.total_length = float(np.sum(self.lengths, dtype=np.float64))

    def hit(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(doc ids, term frequencies, the docs' lengths) of one term."""
        term = bounded_term(term)
        i = int(np.searchsorted(self.terms, term))
        if i >= len(self.terms) or self.terms[i] != term:
            return np.zeros(0, np.intp), np.zeros(0, np.float32), np.zeros(0, np.float32)
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return np.asarray(self.docs[lo:hi]), np.asarray(self.tfs[lo:hi]), np.asarray(self.doc_lengths[lo:hi])


class ScannedPostings:
    """The lookup side of `postings` over a few token lists, without building them: a term's postings are
    found by scanning the documents when a query first asks for it. The rows written since the last publish
    are indexed again after every write (engram.index.merged), and a search asks for a handful of terms;
    sorting every token of them into CSR postings each time cost more than the scans."""

    def __init__(self, docs: Sequence[Sequence[str]], row_first: np.ndarray | None = None) -> None:
        self.docs = docs
        self.lengths = np.fromiter((len(d) for d in docs), dtype=np.float32, count=len(docs))
        self.row_first = _row_first(len(docs), row_first)
        self.n = len(docs)
        self.n_rows = len(self.row_first) - 1
        self.total_length = float(np.sum(self.lengths, dtype=np.float64))
        self._hits: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def hit(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(doc ids, term frequencies, the docs' lengths) of one term, as Postings.hit."""
        found = self._hits.get(term)
        if found is None:
            ids = np.fromiter((i for i, d in enumerate(self.docs) if term in d), dtype=np.intp)
            tfs = np.fromiter((self.docs[i].count(term) for i in ids), dtype=np.float32, count=len(ids))
            found = self._hits[term] = (ids, tfs, self.lengths[ids])
        return found


PostingsLike = Postings | ScannedPostings


def _average_length(parts: list[PostingsLike]) -> float:
    total = sum(p.total_length for p in parts)
    return total / max(sum(p.n for p in parts), 1) if total else 1.0


def bm25_scores(parts: list[PostingsLike], query_tokens: Sequence[str], dead: list[np.ndarray | None]) -> list[np.ndarray]:
    """Okapi BM25 over several postings read as one corpus, one array per part; dead docs score 0 and are
    left out of the document count (their term counts stay: a small, temporary idf drift until the next
    publish)."""
    flat = bm25_corpus_scores(parts, query_tokens, dead)
    return np.split(flat, np.cumsum([p.n for p in parts])[:-1])


def bm25_corpus_scores(parts: list[PostingsLike], query_tokens: Sequence[str], dead: list[np.ndarray | None],
                       n_live: int | None = None) -> np.ndarray:
    """bm25_scores in one array, the parts' documents one after another (`n_live`: the live document
    count when the caller keeps it)."""
    n = sum(p.n for p in parts) - sum(int(d.sum()) for d in dead if d is not None) if n_live is None else n_live
    flat = np.zeros(sum(p.n for p in parts), dtype=np.float32)
    ends = np.cumsum([p.n for p in parts])
    out = [flat[end - p.n:end] for p, end in zip(parts, ends, strict=True)]  # views of flat
    avg = _average_length(parts)
    for term in set(query_tokens):
        hits = [p.hit(term) for p in parts]
        df = sum(len(ids) for ids, _, _ in hits)
        if df == 0:
            continue
        idf = math.log(1 + (max(n, df) - df + 0.5) / (df + 0.5))
        for scores, (ids, tfs, lengths) in zip(out, hits, strict=True):
            if len(ids):
                # the postings' own lengths, read in order: no gather of a per-document norm
                norm = (K1 * (1 - B + B * lengths / avg)).astype(np.float32)
                # add.at, not scores[ids] += ...: the same sums without gathering the scores first
                np.add.at(scores, ids, idf * tfs * (K1 + 1) / (tfs + norm))
    for scores, d in zip(out, dead, strict=True):
        if d is not None:
            scores[d] = 0.0
    return flat


def bm25_row_scores(parts: list[PostingsLike], query_tokens: Sequence[str], dead_rows: list[np.ndarray | None],
                    n_live: int | None = None) -> np.ndarray:
    """BM25 of every row of the parts, one array (rows one part after another): each row's best document;
    dead rows score 0, and their documents are left out of the count (`n_live`: the live documents, when
    the caller keeps it)."""
    dead = [None if d is None else docs_of_rows(d, p.row_first) for p, d in zip(parts, dead_rows, strict=True)]
    flat = bm25_corpus_scores(parts, query_tokens, dead, n_live)
    ends = np.cumsum([p.n for p in parts])
    rows = [row_max(flat[end - p.n:end], p.row_first) for p, end in zip(parts, ends, strict=True)]
    return np.concatenate(rows) if rows else np.zeros(0, np.float32)


def row_max(doc_scores: np.ndarray, row_first: np.ndarray) -> np.ndarray:
    """Each row's best document score (every row has at least one document)."""
    n_rows = len(row_first) - 1
    if len(doc_scores) == n_rows:  # one document per row
        return doc_scores
    if n_rows == 0:
        return np.zeros(0, np.float32)
    return np.maximum.reduceat(doc_scores, np.asarray(row_first[:-1])).astype(np.float32, copy=False)


def docs_of_rows(rows_mask: np.ndarray, row_first: np.ndarray) -> np.ndarray:
    """A mask of rows as a mask of their documents."""
    if len(rows_mask) == int(row_first[-1]):  # one document per row
        return rows_mask
    return np.repeat(rows_mask, np.diff(np.asarray(row_first)))


class BM25:
    """BM25 over a fixed list of token lists in memory (the exact index); score(query) rates every row,
    by its best document when `row_first` groups several documents per row."""

    def __init__(self, docs: Sequence[Sequence[str]], row_first: np.ndarray | None = None) -> None:
        self.postings = Postings(postings(docs, row_first))
        self.n = self.postings.n

    def idf(self, term: str) -> float:
        """Okapi idf (the +1 variant, never negative)."""
        df = len(self.postings.hit(term)[0])
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def score(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every row for the query (0 where no term matches)."""
        return row_max(bm25_corpus_scores([self.postings], query_tokens, [None]), self.postings.row_first)
