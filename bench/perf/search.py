"""Search latency at scale on real sentence embeddings: the published on-disk index against the exact paths.

    python -m bench.perf.real_vectors                 # once: embed the dev sentences (MiniLM)
    python -m bench.perf.search [--sizes 10000 100000] [--large] [--queries 50] [--json OUT]

Facts are the dev data sets' sentences with their MiniLM vectors, filled to each size with noised
copies (bench/perf/real_vectors.py), in a temporary store; queries are held-out real sentences with their
vectors. Per size: the nightly publish writes the on-disk index (timed); a new process runs
`engram search` (the CLI, query embedding included) and the wall time to its first result is
`cold_first_result_s`; then, warm (after engram.query.warm.warm_up, as `engram mcp` does at start: the
index opened, the date parser loaded), in this process, each path in a pass of its own over the same
queries: the index's vector top-10, search_memory facts-only with method vector and hybrid through the
index (end to end: candidate fetch with filters, ranking; query vectors precomputed), the index's
recall@10 against exact float32 top-10 over every vector, and the baselines of the same run: the exact
in-memory path (every process built it from DuckDB before the on-disk index; its build time is
reported, after the index's passes) and the cosine top-k computed in DuckDB. Then hybrid for other
queries, each between the other paths' work as this bench measured it before 2026-11-26 (`hybrid
interleaved`: a 1.5 GB matmul and a DuckDB scan between two searches leave no cache warm), and again
for other queries after the process has answered --steady more (`steady hybrid`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.perf import real_vectors
from bench.sql import named
from engram.index import writer
from engram.index.cache import PERSISTED
from engram.index.vector_index import CACHE
from engram.query.search import search_memory
from engram.query.warm import WARM_QUERY, warm_up
from engram.settings import load_settings
from engram.store import db
from engram.text.normalize import content_hash

DIM = 384
USER = "bench"
MODEL = "all-MiniLM-L6-v2-onnx-int8"  # the default embedder's model name: the CLI embeds queries with it
CHUNK = 100_000


class BenchEmbedder:
    """Returns the precomputed vector registered for a query text."""

    provider = "bench"
    model = MODEL
    dim = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self.vectors[t] for t in texts]).astype(np.float32)


def facts_table(texts: list[str], vecs: np.ndarray, start: int, rng: np.random.Generator) -> pa.Table:
    """Facts of the given texts and vectors."""
    n = len(texts)
    now = datetime.now(UTC).replace(tzinfo=None)  # fresh facts: no confidence decay yet
    ids = [f"f{start + i:07d}" for i in range(n)]
    offsets = pa.array(np.arange(0, n * DIM + 1, DIM, dtype=np.int32))
    emb = pa.ListArray.from_arrays(offsets, pa.array(np.ascontiguousarray(vecs).ravel(), pa.float32()))
    ts = pa.array([now] * n, pa.timestamp("us"))
    return pa.table({
        "id": ids, "user_id": [USER] * n, "text": texts, "claim_type": ["fact"] * n,
        "category": ["general"] * n, "confidence": pa.array(rng.uniform(0.4, 0.95, n)),
        "confidence_at": ts, "evidence_count": pa.array([1] * n, pa.int32()), "status": ["active"] * n,
        "asserted_at": ts, "valid_from": pa.nulls(n, pa.timestamp("us")), "created_at": ts, "last_updated": ts,
        "last_reinforced_at": ts, "embedding": emb, "embedding_model": [MODEL] * n,
        "embedding_dim": pa.array([DIM] * n, pa.int32()), "content_hash": [content_hash(t) for t in texts],
        "tags": pa.array([[] for _ in range(n)], pa.list_(pa.string())), "visibility": ["project"] * n,
        "is_private": [False] * n, "run_id": ["bench"] * n,
    })


def pct(values: list[float]) -> tuple[float, float]:
    """(p50, p95) in ms."""
    a = np.array(values)
    return float(np.percentile(a, 50)), float(np.percentile(a, 95))


def cold_cli(db_path: Path, query: str) -> float:
    """Wall seconds of a new `engram search` process until it has printed its result."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env |= {"ENGRAM_DB_PATH": str(db_path), "ENGRAM_EMBEDDER": "minilm", "ENGRAM_LLM": "none"}
    t = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "engram"), "search", query, "--user", USER, "--type", "facts",
                           "-k", "10", "--json"], env=env, capture_output=True, text=True, check=False)
    secs = time.perf_counter() - t
    if proc.returncode or not json.loads(proc.stdout):
        raise RuntimeError(f"engram search failed: {proc.stderr[-500:]}")
    return secs


def measure(size: int, n_queries: int, rng: np.random.Generator, workdir: Path, steady: int = 100) -> dict:
    """Build a store of `size` facts, publish its index and time every path."""
    db_path = workdir / f"facts_{size}.duckdb"
    os.environ["ENGRAM_DB_PATH"] = str(db_path)
    settings = load_settings(embedder="minilm", llm="none", search_index=True, search_index_min_rows=0)
    exact_settings = settings.model_copy(update={"search_index": False})
    base_t, base_v, query_t, query_v = real_vectors.held_out(size, 1 + 2 * n_queries + (steady + n_queries if steady else 0))
    t0 = time.perf_counter()
    with db.open_store(settings) as con:
        for start in range(0, size, CHUNK):
            table = facts_table(base_t[start:start + CHUNK], base_v[start:start + CHUNK], start, rng)
            with db.transaction(con), db.registered(con, "incoming_facts", table):
                db.execute(con, "queries/consolidate/insert_facts")
        load_s = time.perf_counter() - t0
        t = time.perf_counter()
        published = writer.write_tenant(settings, con, USER, MODEL, DIM, run_id="bench")
        publish_s = time.perf_counter() - t
    result: dict = {"size": size, "load_s": load_s, "publish_s": publish_s, "published": published, "steady": steady}
    queries = list(zip(query_t, query_v, strict=True))
    # 1 warm-up, the measured queries, then (steady) unmeasured queries and the measured steady ones
    queries, later = queries[:1 + n_queries], queries[1 + n_queries:]
    colds = [cold_cli(db_path, queries[i][0]) for i in range(3)]
    result["cold_first_result_s"] = colds[0]
    result["cold_runs_s"] = colds
    embedder = BenchEmbedder()
    for qtext, q in queries:
        embedder.vectors[qtext] = q
    with db.open_store(settings) as con:
        warm_text = queries[0][0]
        embedder.vectors[WARM_QUERY] = queries[0][1]
        t = time.perf_counter()
        # what a serving process (engram mcp) does at start: index open, embedder and date parser loaded
        warm_up(settings, USER, con=con, embedder=embedder)
        result["index_open_s"] = time.perf_counter() - t
        index = PERSISTED.get(con, settings, "facts", USER, MODEL, DIM)
        timings: dict[str, list[float]] = {"index top-10": [], "search vector": [], "search hybrid": [],
                                           "exact search hybrid (baseline)": [], "duckdb cosine (baseline)": [],
                                           "hybrid interleaved": []}
        recall = []
        measured, interleaved, later = queries[1:], later[:n_queries], later[n_queries:]
        for qtext, q in interleaved + later:
            embedder.vectors[qtext] = q

        def timed(name: str, run: Any) -> None:
            for qtext, q in measured:
                t = time.perf_counter()
                run(qtext, q)
                timings[name].append((time.perf_counter() - t) * 1000)

        # each path in a pass of its own over the same queries, as a process serving only that path runs
        # it (a 1.5 GB matmul or a DuckDB scan between two searches leaves neither caches nor cores warm)
        timed("index top-10", lambda qtext, q: index.vector_top(q, 10))
        for method in ("vector", "hybrid"):
            timed(f"search {method}", lambda qtext, q, m=method: search_memory(
                qtext, "facts", 10, USER, settings=settings, con=con, method=m, embedder=embedder))
        for qtext, q in measured:
            rows, _ = index.vector_top(q, 10)
            exact = np.argpartition(-(base_v @ q), 10)[:10]
            got = {int(index.ids[r][1:]) for r in rows.tolist()}
            recall.append(len(set(exact.tolist()) & got) / 10)
        # the exact in-memory index (every process built it before the on-disk index) is built only now:
        # its 1.5 GB of float32 is not in a process that serves from the index
        t = time.perf_counter()
        search_memory(warm_text, "facts", 10, USER, settings=exact_settings, con=con, method="hybrid",
                      embedder=embedder)
        result["exact_build_s"] = time.perf_counter() - t
        timed("exact search hybrid (baseline)", lambda qtext, q: search_memory(
            qtext, "facts", 10, USER, settings=exact_settings, con=con, method="hybrid", embedder=embedder))
        timed("duckdb cosine (baseline)", lambda qtext, q: db.rows(
            con, named("query_facts_cosine_top"), user_id=USER, q=q.tolist(), model=MODEL, dim=DIM, k=10))
        # as this bench measured before 2026-11-26: each hybrid search between the other paths' work
        for qtext, q in interleaved:
            index.vector_top(q, 10)
            np.argpartition(-(base_v @ q), 10)
            search_memory(qtext, "facts", 10, USER, settings=settings, con=con, method="vector", embedder=embedder)
            t = time.perf_counter()
            search_memory(qtext, "facts", 10, USER, settings=settings, con=con, method="hybrid", embedder=embedder)
            timings["hybrid interleaved"].append((time.perf_counter() - t) * 1000)
            search_memory(qtext, "facts", 10, USER, settings=exact_settings, con=con, method="hybrid",
                          embedder=embedder)
            db.rows(con, named("query_facts_cosine_top"), user_id=USER, q=q.tolist(), model=MODEL, dim=DIM, k=10)
        if steady:
            for qtext, _ in later[:steady]:
                search_memory(qtext, "facts", 10, USER, settings=settings, con=con, method="hybrid", embedder=embedder)
            timings["steady hybrid"] = []
            for qtext, _ in later[steady:]:
                t = time.perf_counter()
                search_memory(qtext, "facts", 10, USER, settings=settings, con=con, method="hybrid", embedder=embedder)
                timings["steady hybrid"].append((time.perf_counter() - t) * 1000)
        # the agent's path with the inbox in place (ENGRAM_HOT_PATH=inbox): 200 episodes written since the
        # publish wait in the inbox, and the search reads the published index plus them, never the store
        agent = settings.model_copy(update={"hot_path": "inbox"})
        from engram.store.ingest import add_episodes

        for k in range(0, 200, 20):
            add_episodes([{"user_id": USER, "content": base_t[(k + j) % size]} for j in range(20)], agent)
        # the search embeds these pending episodes on the fly, once (as a real embedder would)
        for i in range(200):
            embedder.vectors[base_t[i % size]] = base_v[i % size]
        for qtext, _ in later[:5]:
            search_memory(qtext, "facts", 10, USER, settings=agent, method="hybrid", embedder=embedder)
        timings["published + inbox hybrid (no store)"] = []
        for qtext, _ in later[steady:] if steady else measured:
            t = time.perf_counter()
            search_memory(qtext, "facts", 10, USER, settings=agent, method="hybrid", embedder=embedder)
            timings["published + inbox hybrid (no store)"].append((time.perf_counter() - t) * 1000)
    result["timings"] = {k: pct(v) for k, v in timings.items()}
    result["recall_at_10"] = float(np.mean(recall))
    result["path"] = ("usearch i8 graph + exact f32 rescoring" if published["facts"]["ann"]
                      else "exact matmul over the mapped vectors")
    CACHE.clear()
    PERSISTED.clear()
    return result


def report(results: list[dict], n_queries: int) -> str:
    """The markdown table of this run."""
    lines = [
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()} {platform.system()} "
        f"{platform.release()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at the end {os.getloadavg()[0]:.1f} (the cores are shared: high load inflates times)",
        f"- {n_queries} held-out real sentences as queries per size after the warm-up of a serving process"
        f" (engram.query.warm), each path timed in a pass of its own over them; interleaved: {n_queries} other ones,"
        f" each hybrid search between the other paths' work (this bench's method before 2026-11-26); steady:"
        f" {n_queries} other ones after {results[0].get('steady', 0) if results else 0} more unmeasured. MiniLM"
        " vectors of the dev sentences filled with noised copies, one tenant; warm rows exclude query embedding,"
        " the CLI row includes it",
        "",
        "| facts | index path | publish s | new `engram search` to result s (3 runs) | index top-10 p50/p95 |"
        " search vector p50/p95 | search hybrid p50/p95 | exact in-memory hybrid p50/p95 (baseline) |"
        " steady hybrid p50/p95 | published + inbox hybrid, no store (ENGRAM_HOT_PATH=inbox, 200 episodes in the"
        " inbox) p50/p95 | hybrid interleaved with the other paths p50/p95 | exact build s |"
        " duckdb cosine p50/p95 (baseline) | hybrid p50 vs duckdb | index recall@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        t = r["timings"]
        base = t["duckdb cosine (baseline)"]
        ex = t["exact search hybrid (baseline)"]
        lines.append(
            f"| {r['size']:,} | {r['path']} | {r['publish_s']:.1f} | {' / '.join(f'{c:.2f}' for c in r['cold_runs_s'])} "
            f"| {t['index top-10'][0]:.1f} / {t['index top-10'][1]:.1f} "
            f"| {t['search vector'][0]:.1f} / {t['search vector'][1]:.1f} "
            f"| {t['search hybrid'][0]:.1f} / {t['search hybrid'][1]:.1f} "
            f"| {ex[0]:.1f} / {ex[1]:.1f} "
            f"| {' / '.join(f'{v:.1f}' for v in t['steady hybrid']) if 'steady hybrid' in t else '-'} "
            f"| {' / '.join(f'{v:.1f}' for v in t['published + inbox hybrid (no store)'])} "
            f"| {t['hybrid interleaved'][0]:.1f} / {t['hybrid interleaved'][1]:.1f} "
            f"| {r['exact_build_s']:.1f} "
            f"| {base[0]:.1f} / {base[1]:.1f} | {base[0] / t['search hybrid'][0]:.1f}x "
            f"| {r['recall_at_10']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def as_json(results: list[dict]) -> dict:
    """The run keyed by size, with the issue's field names."""
    return {str(r["size"]): {
        "cold_first_result_s": r["cold_first_result_s"], "cold_runs_s": r["cold_runs_s"],
        "hybrid_p50_ms": r["timings"]["search hybrid"][0], "hybrid_p95_ms": r["timings"]["search hybrid"][1],
        "vector_p95_ms": r["timings"]["search vector"][1],
        "steady_hybrid_p95_ms": r["timings"].get("steady hybrid", (None, None))[1],
        "published_inbox_hybrid_p95_ms": r["timings"]["published + inbox hybrid (no store)"][1],
        "hybrid_interleaved_p95_ms": r["timings"]["hybrid interleaved"][1],
        "exact_hybrid_p95_ms": r["timings"]["exact search hybrid (baseline)"][1],
        "duckdb_p50_ms": r["timings"]["duckdb cosine (baseline)"][0],
        "duckdb_p95_ms": r["timings"]["duckdb cosine (baseline)"][1],
        "recall_at_10": r["recall_at_10"], "publish_s": r["publish_s"], "exact_build_s": r["exact_build_s"],
        "load": os.getloadavg()[0],
    } for r in results}


def main() -> None:
    """Run the benchmark; print the markdown table (and write JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--large", action="store_true", help="Also measure 1,000,000 facts (~6 GB RAM).")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--steady", type=int, default=100,
                        help="Unmeasured queries before the steady-state hybrid pass (0: no such pass).")
    parser.add_argument("--json", type=Path, help="Write the results keyed by size to this file.")
    args = parser.parse_args()
    sizes = args.sizes + ([1_000_000] if args.large else [])
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="engram-search-") as tmp:
        results = []
        for size in sizes:
            results.append(measure(size, args.queries, rng, Path(tmp), args.steady))
            print(report(results, args.queries), flush=True)
    if args.json:
        args.json.write_text(json.dumps(as_json(results), indent=1))


if __name__ == "__main__":
    main()
