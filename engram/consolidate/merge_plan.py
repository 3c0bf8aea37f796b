"""Merge planning: similar pairs -> connected components -> auto-merge or review. Pure logic."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def similar_pairs(
    query: np.ndarray, corpus: np.ndarray, threshold: float, top_k: int | None = None,
    query_chunk: int = 1024, corpus_chunk: int = 32768,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, cos) with query[i] . corpus[j] > threshold, in blocks of at most 32M scores (128 MB);
    with top_k, only each query row's top_k of them (nearest first, ties by lower j)."""
    rows, cols, sims = [], [], []
    for start in range(0, len(corpus), corpus_chunk):
        block = corpus[start : start + corpus_chunk]
        for qs in range(0, len(query), query_chunk):
            scores = query[qs : qs + query_chunk] @ block.T
            # flat positions split by divmod: the same (i, j) in the same order as np.nonzero on the 2-D
            # mask, ~7x faster on a 1024 x 9,900 block here (30 -> 4 ms; a 1M night reads ~20 blocks)
            i, j = np.divmod(np.flatnonzero(scores > threshold), scores.shape[1])
            s = scores[i, j]
            if top_k is not None:
                i, j, s = top_per_row(i, j, s, top_k)
            rows.append(i + qs)
            cols.append(j + start)
            sims.append(s)
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    i, j, s = np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)
    return top_per_row(i, j, s, top_k) if top_k is not None else (i, j, s)


def top_per_row(
    rows: np.ndarray, cols: np.ndarray, sims: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k highest-scoring (row, col, sim) triples of each row (ties by lower col), ordered by row."""
    order = np.lexsort((cols, -sims.astype(np.float64), rows))
    rows, cols, sims = rows[order], cols[order], sims[order]
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
    keep = rank < k
    return rows[keep], cols[keep], sims[keep]


def components(edges: list[tuple[str, str]]) -> list[list[str]]:
    """Connected components (sorted, each sorted) of an undirected graph given as edges."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for node in parent:
        groups.setdefault(find(node), []).append(node)
    return sorted(sorted(g) for g in groups.values())


@dataclass(frozen=True)
class FactInfo:
    """What merge rules need to know about one fact."""

    id: str
    confidence: float
    category: str
    created_at_rank: int  # lower = older; breaks confidence ties deterministically


@dataclass(frozen=True)
class MergePlan:
    """Auto-merges (winner, losers) and components left for review with the reason."""

    merges: list[tuple[str, list[str]]]
    reviews: list[tuple[list[str], str]]


def _adjacency(pairs: set[frozenset[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for pair in pairs:
        a, b = sorted(pair)
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    return out


def plan_merges(
    comps: list[list[str]],
    facts: dict[str, FactInfo],
    conflicting: set[frozenset[str]],
    min_confidence: float,
    agree: set[frozenset[str]],
) -> MergePlan:
    """Auto-merge a component when one category, no contradiction inside, and one fact > min_confidence.

    A fact is merged only into a winner it was judged the same as (`agree` holds the pair): a
    component chained through a middle fact (A same as B, B same as C, A not C) would otherwise fold C
    into A without any decision about the two. What the winner does not take is planned again.
    """
    merges: list[tuple[str, list[str]]] = []
    reviews: list[tuple[list[str], str]] = []
    neighbours, contested = _adjacency(agree), _adjacency(conflicting)
    todo = list(reversed(comps))
    while todo:
        comp = todo.pop()
        infos = [facts[i] for i in comp]
        members = set(comp)
        if any(contested.get(i, set()) & members for i in comp):
            continue  # contradictions are handled by the contradiction path, never merged
        if len({f.category for f in infos}) > 1:
            reviews.append((comp, "different categories"))
            continue
        if max(f.confidence for f in infos) <= min_confidence:
            reviews.append((comp, f"no fact above confidence {min_confidence}"))
            continue
        winner = min(infos, key=lambda f: (-f.confidence, f.created_at_rank, f.id))
        losers = [f.id for f in infos if f.id in neighbours.get(winner.id, ())]
        merges.append((winner.id, losers))
        rest = members - {winner.id, *losers}
        edges = [(a, b) for a in rest for b in neighbours.get(a, ()) if a < b and b in rest]
        todo.extend(reversed(components(edges)))
    return MergePlan(merges, reviews)
