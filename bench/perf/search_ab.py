"""Warm search latency of two versions of engram on one store: the same facts, the same queries.

    python -m bench.perf.search_ab build STORE [--size 100000]       # once, with this checkout's schema
    python -m bench.perf.search_ab time STORE [--json OUT]           # with the engram on PYTHONPATH

`build` fills STORE with the dev sentences and their MiniLM vectors, filled to --size with noised
copies (bench/perf/real_vectors.py, as bench/perf/search.py does), and keeps 200 held-out sentences as queries
(STORE.queries.npz). `time` runs 20 warm-up searches and then 180 timed ones (search_memory facts,
hybrid, exact in-memory path, query vectors precomputed) with whatever engram is importable, and prints
p50/p95 in ms. To time an older commit, check it out in a git worktree and run
`SQL_DIR=<worktree>/sql PYTHONPATH=<worktree> python bench/perf/search_ab.py time STORE` (by path, so this
checkout's engram is not imported first; SQL_DIR: an editable install would otherwise hand the old code
this checkout's SQL). Alternate the two versions a few times: the machines are shared, and only the
ratio of medians means anything.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

USER = "bench"
MODEL = "all-MiniLM-L6-v2-onnx-int8"
DIM = 384
N_QUERIES = 200
WARMUP = 20


class _Embedder:
    """Query vectors looked up, not computed: the timing is the search, not the model."""

    provider = "bench"
    model = MODEL
    dim = DIM

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self.vectors[t] for t in texts]).astype(np.float32)


def build(store: Path, size: int) -> None:
    """A store of `size` facts and the held-out queries beside it."""
    from bench.perf import real_vectors
    from bench.perf.search import CHUNK, facts_table
    from engram.settings import load_settings
    from engram.store import db

    os.environ["ENGRAM_DB_PATH"] = str(store)
    settings = load_settings(embedder="minilm", llm="none")
    base_t, base_v, query_t, query_v = real_vectors.held_out(size, N_QUERIES)
    rng = np.random.default_rng(0)
    with db.open_store(settings) as con:
        for start in range(0, size, CHUNK):
            table = facts_table(base_t[start:start + CHUNK], base_v[start:start + CHUNK], start, rng)
            with db.transaction(con), db.registered(con, "incoming_facts", table):
                db.execute(con, "queries/consolidate/insert_facts")
    np.savez(f"{store}.queries.npz", texts=np.array(query_t, dtype=object), vecs=query_v)


def time_search(store: Path) -> dict[str, float | str]:
    """p50/p95 (ms) of warm facts searches on `store` with the importable engram."""
    import engram
    from engram.settings import load_settings
    from engram.store import db

    if os.environ.get("SQL_DIR"):
        db.SQL_DIR = Path(os.environ["SQL_DIR"])
    from engram.query.search import search_memory

    os.environ["ENGRAM_DB_PATH"] = str(store)
    settings = load_settings(embedder="minilm", llm="none")
    if hasattr(settings, "search_index"):
        settings = settings.model_copy(update={"search_index": False})
    saved = np.load(f"{store}.queries.npz", allow_pickle=True)
    texts = [str(t) for t in saved["texts"]]
    embedder = _Embedder(dict(zip(texts, saved["vecs"], strict=True)))
    took = []
    with db.open_reader(settings) as con:
        for i, text in enumerate(texts):
            t0 = time.perf_counter()
            search_memory(text, "facts", 10, USER, settings=settings, con=con, embedder=embedder)
            if i >= WARMUP:
                took.append(time.perf_counter() - t0)
    return {"engram": str(Path(engram.__file__).parent), "searches": len(took),
            "p50_ms": round(1000 * float(np.percentile(took, 50)), 2),
            "p95_ms": round(1000 * float(np.percentile(took, 95)), 2)}


def main(argv: list[str] | None = None) -> None:
    """Parse arguments and build or time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["build", "time"])
    parser.add_argument("store", type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--json", type=Path, default=None, help="Append the timing as one JSON line here.")
    args = parser.parse_args(argv)
    if args.action == "build":
        build(args.store, args.size)
        print(f"[search_ab] built {args.store} ({args.size} facts)")
        return
    result = time_search(args.store)
    print(json.dumps(result))
    if args.json:
        with args.json.open("a", encoding="utf-8") as out:
            out.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
