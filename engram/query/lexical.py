"""BM25 over episode and fact text, pure numpy: the lexical half of hybrid search."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import snowballstemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Function words carry no topic; dropping them lets BM25 weigh the words a question is about.
STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with about as is are was were be been being do
    does did have has had i you he she it we they me him her them my your his its our their this that
    these those what which who whom when where why how not no so than too very can will just from up
    down out over into there here then also am would could should may might shall s t""".split()
)
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


def tokenize(text: str) -> list[str]:
    """Lowercased word stems without stopwords (Snowball English)."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class BM25:
    """Okapi BM25 over a fixed list of token lists; score(query) rates every document."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float32)
        avg = float(lengths.mean()) if self.n and lengths.sum() else 1.0
        self._norm = (k1 * (1 - b + b * lengths / avg)).astype(np.float32)
        postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for j, doc in enumerate(docs):
            for term, count in Counter(doc).items():
                ids, tfs = postings[term]
                ids.append(j)
                tfs.append(count)
        self._postings = {
            t: (np.array(ids, dtype=np.int64), np.array(tfs, dtype=np.float32))
            for t, (ids, tfs) in postings.items()
        }

    def idf(self, term: str) -> float:
        """Okapi idf (the +1 variant, never negative)."""
        df = len(self._postings[term][0]) if term in self._postings else 0
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def score(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the query (0 where no term matches)."""
        scores = np.zeros(self.n, dtype=np.float32)
        for term in set(query_tokens):
            hit = self._postings.get(term)
            if hit is None:
                continue
            ids, tfs = hit
            np.add.at(scores, ids, self.idf(term) * tfs * (self.k1 + 1) / (tfs + self._norm[ids]))  # as persisted
        return scores
