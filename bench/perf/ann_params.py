"""Recall and query time of the usearch graph per build setting, on real sentence vectors at scale.

    python -m bench.perf.ann_params [--size 1000000] [--queries 60] [--builds 16/64 24/64 16/128] [--ef 512 1024]

The vectors are those bench/perf/search.py stores: the dev sentences' MiniLM vectors filled to --size with
noised copies (bench/perf/real_vectors.py), with --queries held-out real sentences as queries. For each
connectivity/expansion_add pair the graph is built as publish builds it (i8, inner product, 2
threads), then searched at each expansion_search for the top 100 candidates, which are rescored
exactly in float32 as the search path does (engram/index/). recall@10 is against the exact
float32 top-10 over every vector. HNSW builds on several threads are not deterministic: two builds
with the same setting can differ by a few points of recall at 1M.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.perf import real_vectors

RESCORED = 100  # engram.index.merged.ANN_RESCORE: candidates rescored for a top-10


def held_out(size: int, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(vectors to index, query vectors), split as bench/perf/search.py splits them."""
    _, base, _, queries = real_vectors.held_out(size, n_queries + 1)
    return base, queries


def measure(base: np.ndarray, queries: np.ndarray, builds: list[tuple[int, int]], efs: list[int]) -> list[dict]:
    """One row per (build, expansion_search)."""
    from usearch.index import Index

    exact = [set(np.argpartition(-(base @ q), 10)[:10].tolist()) for q in queries]
    rows = []
    for connectivity, expansion_add in builds:
        t = time.perf_counter()
        graph = Index(ndim=base.shape[1], metric="ip", dtype="i8", connectivity=connectivity,
                      expansion_add=expansion_add)
        graph.add(np.arange(len(base), dtype=np.uint64), base, threads=2)
        build_s = time.perf_counter() - t
        for ef in efs:
            graph.expansion_search = ef
            recall, ms = [], []
            for q, want in zip(queries, exact, strict=True):
                t = time.perf_counter()
                keys = graph.search(q, RESCORED, exact=False).keys.astype(np.int64)
                keys = np.sort(keys[keys >= 0])
                top = keys[np.argsort(-(base[keys] @ q))[:10]]
                ms.append((time.perf_counter() - t) * 1000)
                recall.append(len(want & set(top.tolist())) / 10)
            rows.append({"build": f"{connectivity}/{expansion_add}", "build_s": build_s, "expansion_search": ef,
                         "recall_at_10": float(np.mean(recall)), "p50_ms": float(np.percentile(ms, 50)),
                         "p95_ms": float(np.percentile(ms, 95))})
            print(rows[-1], flush=True)
        del graph
    return rows


def main() -> None:
    """Print one line per build and expansion_search, then a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--builds", nargs="+", default=["16/64", "24/64", "16/128"])
    parser.add_argument("--ef", type=int, nargs="+", default=[512, 1024])
    args = parser.parse_args()
    base, queries = held_out(args.size, args.queries)
    builds = [(int(c), int(a)) for c, a in (b.split("/") for b in args.builds)]
    rows = measure(base, queries, builds, args.ef)
    print("| connectivity/expansion_add | build s | expansion_search | recall@10 | p50 / p95 ms |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['build']} | {r['build_s']:.0f} | {r['expansion_search']} | {r['recall_at_10']:.3f} "
              f"| {r['p50_ms']:.2f} / {r['p95_ms']:.2f} |")


if __name__ == "__main__":
    main()
