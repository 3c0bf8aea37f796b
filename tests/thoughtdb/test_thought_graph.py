"""Tarjan SCCs, condensation, path enumeration and greedy cover used by `why`."""

from __future__ import annotations

import itertools
import random

import pytest

from engram.thoughtdb.graph import condense, greedy_cover, source_paths, tarjan_scc


def _sets(comps: list[list[str]]) -> set[frozenset[str]]:
    return {frozenset(c) for c in comps}


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": ["b"], "b": ["c"]}, [{"a"}, {"b"}, {"c"}]),
        ({"a": ["b"], "b": ["a"]}, [{"a", "b"}]),
        ({"a": ["b"], "b": ["c"], "c": ["a"], "c2": ["c"]}, [{"a", "b", "c"}, {"c2"}]),
        ({"a": ["a"]}, [{"a"}]),  # a self-loop is a single-node component
        ({"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": ["b"]}, [{"a"}, {"b", "d"}, {"c"}]),
        ({"a": ["b"], "b": ["c"], "c": ["b", "d"], "d": ["e"], "e": ["d"]}, [{"a"}, {"b", "c"}, {"d", "e"}]),
    ],
)
def test_tarjan_components(edges: dict[str, list[str]], expected: list[set[str]]) -> None:
    nodes = sorted(set(edges) | {x for v in edges.values() for x in v})
    comps = tarjan_scc(nodes, edges)
    assert _sets(comps) == {frozenset(e) for e in expected}
    assert sorted(n for c in comps for n in c) == nodes  # a partition


def _reach(succ: dict[int, list[int]], a: int) -> set[int]:
    seen, todo = {a}, [a]
    while todo:
        for b in succ.get(todo.pop(), []):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def test_tarjan_matches_mutual_reachability_on_random_graphs() -> None:
    rng = random.Random(0)
    for _ in range(40):
        n = rng.randint(1, 12)
        succ = {i: sorted({rng.randrange(n) for _ in range(rng.randint(0, 3))}) for i in range(n)}
        reach = {i: _reach(succ, i) for i in range(n)}
        comps = tarjan_scc(list(range(n)), succ)
        comp_of = {x: i for i, c in enumerate(comps) for x in c}
        for a, b in itertools.product(range(n), repeat=2):
            assert (comp_of[a] == comp_of[b]) == (b in reach[a] and a in reach[b])


def test_tarjan_deep_chain_does_not_recurse() -> None:
    n = 20_000
    succ = {i: [i + 1] for i in range(n - 1)}
    succ[n - 1] = [0]
    comps = tarjan_scc(list(range(n)), succ)
    assert len(comps) == 1 and len(comps[0]) == n


def test_condense_is_acyclic_and_keeps_links() -> None:
    succ = {"s": ["a"], "a": ["b"], "b": ["a", "src"], "src": []}
    dag = condense(["s", "a", "b", "src"], succ)
    assert dag.comp_of["a"] == dag.comp_of["b"]
    ca, cs, csrc = dag.comp_of["a"], dag.comp_of["s"], dag.comp_of["src"]
    assert dag.succ[cs] == [ca] and dag.succ[ca] == [csrc] and dag.succ[csrc] == []


def test_source_paths_all_and_truncated() -> None:
    dag = {0: [1, 2], 1: [3], 2: [3, 4], 3: [], 4: []}
    paths, cut = source_paths(dag, 0, 100)
    assert sorted(paths) == [(0, 1, 3), (0, 2, 3), (0, 2, 4)] and not cut
    paths, cut = source_paths(dag, 0, 2)
    assert len(paths) == 2 and cut
    assert source_paths({0: []}, 0, 10) == ([(0,)], False)


def test_greedy_cover_picks_shared_claim_first() -> None:
    paths = [["x", "a", "e1"], ["x", "b", "e2"], ["a", "b", "e3"], ["e4"]]
    chosen, uncoverable = greedy_cover(paths, {"x": 0.5, "a": 0.9, "b": 0.1})
    # x and a both cover two paths: a wins on weight; then b (or x) covers the last coverable path
    assert chosen[0] == "a"
    assert set(chosen) in ({"a", "b"}, {"a", "x"})
    assert uncoverable == [3]
    covered = {i for i, p in enumerate(paths) if set(p) & set(chosen)}
    assert covered == {0, 1, 2}


def test_greedy_cover_is_deterministic_on_ties() -> None:
    paths = [["b"], ["a"], ["a", "b"]]
    assert greedy_cover(paths, {"a": 0.5, "b": 0.5}) == (["a", "b"], [])
    assert greedy_cover([], {"a": 1.0}) == ([], [])
