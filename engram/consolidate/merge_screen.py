"""The merge rule over a whole batch of pairs: the merge model's score for every pair at once.

`pair_rules.same_statement` reads one pair at a time in Python, and a night at 1M facts asks it of
~10^5 pairs, of which it merges a few hundred (bench/perf/CONSOLIDATE.md). Here every text of the batch is
read once, its word, word-pair, word-triple and character 4-gram sets become rows of sparse matrices,
and the set overlaps the model reads are row products for all pairs together. A pair whose score
falls below the model's cut (by a margin) is turned down here; every other pair goes through
`same_statement` itself. The scores are the same floats the per-pair model computes (the same integer
counts, the same operations in the same order; a test compares them), so the decisions are the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from engram.arrays import unique_sorted
from engram.consolidate.pair_rules import (
    _LOGIT_CUT,
    MERGE_COEF,
    MERGE_INTERCEPT,
    char_text,
    content_word,
    same_statement,
)
from engram.text.sentences import _NUMBER, _SPEAKER, names
from engram.text.tokens import suffix_stem, word_tuple

# A pair this close to the cut goes to the per-pair rule even when its score here is below it: the
# scores are meant to be equal, and this keeps a rounding difference from changing a decision.
_SCREEN_MARGIN = 1e-6
_LEADING = len(MERGE_COEF) - 2  # the features before added_clause's two (which only lower the score)


def same_statements(pairs: Sequence[tuple[str, str, float, float]]) -> list[bool]:
    """[same_statement(a, b, cosine, min_cosine) for each pair], with most pairs turned down at once."""
    out = [False] * len(pairs)
    todo = [i for i, (_, _, cosine, min_cosine) in enumerate(pairs) if cosine > min_cosine]
    if not todo:
        return out
    scores = leading_scores([pairs[i][:3] for i in todo])
    for i, score in zip(todo, scores, strict=True):
        if score is None or MERGE_INTERCEPT + score >= _LOGIT_CUT - _SCREEN_MARGIN:
            out[i] = same_statement(*pairs[i])
    return out


def leading_scores(pairs: Sequence[tuple[str, str, float]]) -> list[float | None]:
    """For each (a, b, cosine): the merge model's weighted sum of its leading features (as
    pair_rules._model_merges computes it), or None where this batch reading cannot say it exactly
    (a word of one text is a name in the other only)."""
    index: dict[str, int] = {}
    left = np.fromiter((index.setdefault(a, len(index)) for a, _, _ in pairs), np.int64, len(pairs))
    right = np.fromiter((index.setdefault(b, len(index)) for _, b, _ in pairs), np.int64, len(pairs))
    texts = list(index)
    cosine = np.fromiter((c for _, _, c in pairs), np.float64, len(pairs))

    token_ids = _Numbering()
    seq: list[int] = []
    info = []  # per text: its word tokens, names and numbers
    read_words = word_tuple.__wrapped__  # uncached: each text is read once here
    for text in texts:
        # as pair_rules._stems and _statement read it (a speaker prefix needs a colon)
        statement = _SPEAKER.sub("", text, count=1) if ":" in text else text
        tokens = read_words(statement)
        seq.extend(map(token_ids.__getitem__, tokens))
        info.append((tokens, names(statement), frozenset(_NUMBER.findall(statement))))
    stem_ids = _Numbering()
    token_stem = [stem_ids[suffix_stem(w)] for w in token_ids]  # per token id: its stem's id
    token_content = [content_word(w) for w in token_ids]  # per token id: may be a content word

    lengths = np.fromiter((len(tokens) for tokens, _, _ in info), np.int64, len(texts))
    token_seq = np.asarray(seq, np.int64)
    words = np.asarray(token_stem, np.int64)[token_seq]
    content_mask = np.asarray(token_content, bool)[token_seq]
    start = 0
    for tokens, own_names, _ in info:  # a text's own names are no content words of it
        if own_names:
            content_mask[start:start + len(tokens)] &= np.fromiter((w not in own_names for w in tokens), bool, len(tokens))
        start += len(tokens)
    rows = np.repeat(np.arange(len(texts)), lengths)
    content = _sets(rows[content_mask], words[content_mask], len(stem_ids), len(texts))
    unigrams = _sets(rows, words, len(stem_ids), len(texts))
    bigrams = _ngram_sets(words, lengths, 2, len(stem_ids))
    trigrams = _ngram_sets(words, lengths, 3, len(stem_ids))
    chars = _char_sets(texts)

    inter_c, size_ca, size_cb = _overlap(content, left, right)
    only_a, only_b = size_ca - inter_c, size_cb - inter_c
    len_a, len_b = lengths[left], lengths[right]
    longest = np.maximum(len_a, len_b)
    log1p = np.array([math.log1p(k) for k in range(int(max(longest.max(initial=0), only_a.max(initial=0),
                                                                only_b.max(initial=0))) + 1)])
    numbers_differ, names_jaccard, names_differ, exact = _pair_names(info, left, right)

    small = np.minimum(size_ca, size_cb)
    features = [
        cosine,
        _jaccard(inter_c, size_ca, size_cb),
        _jaccard(*_overlap(unigrams, left, right)),
        _jaccard(*_overlap(bigrams, left, right)),
        _jaccard(*_overlap(chars, left, right)),
        numbers_differ,
        np.abs(len_a - len_b) / np.maximum(longest, 1),
        np.divide(inter_c, small, out=np.ones(len(pairs)), where=small > 0),
        _jaccard(*_overlap(trigrams, left, right)),
        names_jaccard,
        names_differ,
        log1p[longest],
        log1p[np.maximum(only_a, only_b)],
        log1p[np.minimum(only_a, only_b)],
    ]
    assert len(features) == _LEADING
    weighted = np.zeros(len(pairs))
    for w, x in zip(MERGE_COEF, features, strict=False):  # summed in the per-pair order: the same float
        weighted = weighted + w * x
    return [float(s) if ok else None for s, ok in zip(weighted, exact, strict=True)]


class _Numbering(dict):
    """Numbers keys 0, 1, 2, ... in the order they are first looked up."""

    def __missing__(self, key: str) -> int:
        self[key] = number = len(self)
        return number


def _jaccard(shared: np.ndarray, size_a: np.ndarray, size_b: np.ndarray) -> np.ndarray:
    """pair_rules._jaccard on counts: 1.0 where both sets are empty."""
    union = size_a + size_b - shared
    return np.divide(shared, union, out=np.ones(len(shared)), where=union > 0)


def _overlap(rows: sparse.csr_matrix, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per pair: the size of the two sets' intersection, and each set's size."""
    sizes = np.diff(rows.indptr)
    shared = np.asarray(rows[left].multiply(rows[right]).sum(axis=1), dtype=np.int64).ravel()
    return shared, sizes[left], sizes[right]


def _sets(row: np.ndarray, key: np.ndarray, key_limit: int, n_rows: int) -> sparse.csr_matrix:
    """A 0/1 matrix with a 1 at each (row, key), 0 <= key < key_limit; each row's keys sorted (the
    canonical form, in which scipy multiplies rows by merging them)."""
    key_limit = max(key_limit, 1)
    if n_rows * key_limit >= 1 << 63:  # renumber the keys densely so that (row, key) fits one int64
        distinct = unique_sorted(key)
        key, key_limit = np.searchsorted(distinct, key), max(len(distinct), 1)
    both = unique_sorted(row * key_limit + key)
    indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(both // key_limit, minlength=n_rows), out=indptr[1:])
    return sparse.csr_matrix((np.ones(len(both), np.int8), both % key_limit, indptr), shape=(n_rows, key_limit))


def _ngram_sets(symbols: np.ndarray, lengths: np.ndarray, n: int, base: int) -> sparse.csr_matrix:
    """Each text's set of n-grams of its symbol sequence (texts laid end to end in `symbols`, each
    symbol < base)."""
    base = max(base, 1)
    grams = np.maximum(lengths - (n - 1), 0)
    row = np.repeat(np.arange(len(lengths)), grams)
    # an n-gram starts at every position of a text but its last n - 1
    pos = np.arange(int(grams.sum())) + np.repeat(np.cumsum(lengths) - lengths - (np.cumsum(grams) - grams), grams)
    if base ** n >= 1 << 63:  # too many symbols to key n-grams in 64 bits: renumber the (n-1)-grams first
        head = _ngram_keys(symbols, pos, n - 1, base)
        distinct = unique_sorted(head)
        key, limit = np.searchsorted(distinct, head) * base + symbols[pos + n - 1], len(distinct) * base
    else:
        key, limit = _ngram_keys(symbols, pos, n, base), base ** n
    return _sets(row, key, limit, len(lengths))


def _ngram_keys(symbols: np.ndarray, pos: np.ndarray, n: int, base: int) -> np.ndarray:
    """The n-gram starting at each position, as a number in base `base`."""
    if not len(pos):
        return np.zeros(0, np.int64)
    key = symbols[: len(symbols) - n + 1].astype(np.int64)
    for k in range(1, n):
        key = key * base + symbols[k: len(symbols) - n + 1 + k]
    return key[pos]


def _char_sets(texts: Sequence[str]) -> sparse.csr_matrix:
    """Each text's set of character 4-grams, as pair_rules._chars reads them."""
    normal = [char_text(t) for t in texts]
    codes = np.frombuffer("".join(normal).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    present = np.bincount(codes) > 0 if len(codes) else np.zeros(1, bool)
    alphabet = np.cumsum(present) - 1  # a code point's rank among those present: dense symbols
    lengths = np.fromiter((len(s) for s in normal), np.int64, len(normal))
    return _ngram_sets(alphabet[codes], lengths, 4, int(present.sum()))


def _pair_names(info: list[tuple[tuple[str, ...], frozenset[str], frozenset[str]]], left: np.ndarray,
                right: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pair: numbers disagree, the names' Jaccard (1.0 without names), names disagree, and whether
    the content sets read per text are the pair's: pair_rules.view leaves out of both texts the names
    of either, so a word of one text that is a name only in the other makes the pair's set another."""
    n = len(left)
    numbers_differ, names_jaccard, names_differ = np.zeros(n), np.ones(n), np.zeros(n)
    exact = np.ones(n, bool)
    for p, (i, j) in enumerate(zip(left.tolist(), right.tolist(), strict=True)):
        (words_a, names_a, numbers_a), (words_b, names_b, numbers_b) = info[i], info[j]
        numbers_differ[p] = float(numbers_a != numbers_b)
        if names_a or names_b:
            shared = len(names_a & names_b)
            names_jaccard[p] = shared / (len(names_a) + len(names_b) - shared)
            names_differ[p] = float(names_a != names_b)
            exact[p] = (names_b - names_a).isdisjoint(words_a) and (names_a - names_b).isdisjoint(words_b)
    return numbers_differ, names_jaccard, names_differ, exact
