"""Pure graph algorithms behind `why`: Tarjan SCCs, condensation, path enumeration, greedy cover."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

N = TypeVar("N", bound=Hashable)


def tarjan_scc(nodes: Sequence[N], succ: Mapping[N, Sequence[N]]) -> list[list[N]]:
    """Strongly connected components (iterative Tarjan), members in input order, components in discovery order."""
    order = {n: i for i, n in enumerate(nodes)}
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    comps: list[list[N]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[N, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = [c for c in succ.get(node, ()) if c in order]
            recurse = False
            while i < len(children):
                child = children[i]
                i += 1
                if child not in index:
                    work.append((node, i))
                    work.append((child, 0))
                    recurse = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if recurse:
                continue
            if low[node] == index[node]:
                comp: list[N] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                comps.append(sorted(comp, key=order.__getitem__))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return comps


@dataclass(frozen=True)
class Condensed:
    """A DAG of components: comp_of maps each node to its component index."""

    components: list[list[Hashable]]
    comp_of: dict[Hashable, int]
    succ: dict[int, list[int]]


def condense(nodes: Sequence[N], succ: Mapping[N, Sequence[N]]) -> Condensed:
    """Collapse every SCC into one node; the result is acyclic."""
    comps = tarjan_scc(nodes, succ)
    comp_of = {n: i for i, comp in enumerate(comps) for n in comp}
    dag: dict[int, list[int]] = {i: [] for i in range(len(comps))}
    for n in nodes:
        for c in succ.get(n, ()):
            if c not in comp_of:
                continue
            a, b = comp_of[n], comp_of[c]
            if a != b and b not in dag[a]:
                dag[a].append(b)
    for a in dag:
        dag[a].sort()
    return Condensed(comps, comp_of, dag)


def source_paths(dag: Mapping[int, Sequence[int]], start: int, max_paths: int) -> tuple[list[tuple[int, ...]], bool]:
    """Every path from start to a sink of the DAG (at most max_paths, deterministic); flag = truncated."""
    paths: list[tuple[int, ...]] = []
    stack: list[tuple[int, ...]] = [(start,)]
    while stack:
        path = stack.pop()
        children = dag.get(path[-1], ())
        if not children:
            if len(paths) >= max_paths:
                return paths, True
            paths.append(path)
            continue
        for child in reversed(children):
            stack.append(path + (child,))
    return paths, False


def greedy_cover(
    paths: Sequence[Iterable[Hashable]],
    candidates: Mapping[Hashable, float],
) -> tuple[list[Hashable], list[int]]:
    """Greedy set cover: candidates (with a tie-break weight) hit paths they lie on.

    Each step picks the candidate covering most uncovered paths; ties go to the higher weight, then
    the smaller id. Returns (chosen in pick order, indexes of paths no candidate lies on).
    The greedy rule is within a factor ln(#paths) of the true minimum (set cover is NP-hard).
    """
    hits: dict[Hashable, set[int]] = {c: set() for c in candidates}
    uncoverable: list[int] = []
    for i, path in enumerate(paths):
        members = [m for m in path if m in hits]
        if not members:
            uncoverable.append(i)
        for m in members:
            hits[m].add(i)
    uncovered = set().union(*hits.values()) if hits else set()
    chosen: list[Hashable] = []
    while uncovered:
        best = min(hits, key=lambda c: (-len(hits[c] & uncovered), -candidates[c], str(c)))
        gain = hits[best] & uncovered
        if not gain:
            break
        chosen.append(best)
        uncovered -= gain
    return chosen, uncoverable
