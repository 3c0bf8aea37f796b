"""Search latency at scale: p50/p95 of search_memory over 10k and 100k facts (1M with --large).

    python -m bench.search [--sizes 10000 100000] [--large] [--queries 50]

Facts are synthetic (clustered unit vectors, 384 dims, sentences from a 5k-word vocabulary) in a
temporary store. Measured per size, after one warm-up query that builds the in-memory index:
the index's vector top-k alone, search_memory facts-only with method vector and hybrid (end to
end: signature check, candidate fetch with filters, ranking; the query vector is precomputed, so
embedding time is excluded), and the baseline of the same run: the cosine top-k computed in
DuckDB per query (list_cosine_similarity). Above EXACT_LIMIT vectors the index pre-selects with a
1-bit sketch and rescores exactly; its recall@10 against exact search is reported.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from engram.query import vector_index
from engram.query.search import search_memory
from engram.query.vector_index import CACHE
from engram.settings import load_settings
from engram.store import db
from engram.text.normalize import content_hash

DIM = 384
USER = "bench"
MODEL = "bench-synthetic-384"
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


def synthetic(n: int, rng: np.random.Generator, centroids: np.ndarray, vocab: np.ndarray, start: int) -> pa.Table:
    """n facts: clustered vectors and 8-14 word sentences."""
    labels = rng.integers(0, len(centroids), n)
    vecs = centroids[labels] + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32) / np.sqrt(DIM)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    lengths = rng.integers(8, 15, n)
    words = rng.choice(vocab, size=(n, 14))
    texts = [" ".join(words[i, : lengths[i]]) for i in range(n)]
    now = datetime.now(UTC).replace(tzinfo=None)  # fresh facts: no confidence decay yet
    ids = [f"f{start + i}" for i in range(n)]
    offsets = pa.array(np.arange(0, n * DIM + 1, DIM, dtype=np.int32))
    emb = pa.ListArray.from_arrays(offsets, pa.array(vecs.ravel(), pa.float32()))
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


def measure(size: int, n_queries: int, rng: np.random.Generator, workdir: Path) -> dict:
    """Build a store of `size` facts and time every method."""
    os.environ["ENGRAM_DB_PATH"] = str(workdir / f"facts_{size}.duckdb")
    settings = load_settings(embedder="hash", llm="none")
    centroids = rng.normal(size=(1000, DIM)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    vocab = np.array([f"w{i}" for i in range(5000)])
    t0 = time.perf_counter()
    with db.open_store(settings) as con:
        for start in range(0, size, CHUNK):
            table = synthetic(min(CHUNK, size - start), rng, centroids, vocab, start)
            with db.transaction(con), db.registered(con, "incoming_facts", table):
                db.execute(con, "queries/insert_facts")
    load_s = time.perf_counter() - t0
    embedder = BenchEmbedder()
    result: dict = {"size": size, "load_s": load_s}
    with db.open_store(settings) as con:
        sample = db.rows(con, "queries/query_bench_sample_facts", user_id=USER, n=n_queries + 1)
        queries = []
        for i, (text, emb) in enumerate(sample):
            q = np.asarray(emb, dtype=np.float32) + 0.5 * rng.normal(size=DIM).astype(np.float32) / np.sqrt(DIM)
            q /= np.linalg.norm(q)
            qtext = " ".join(text.split()[:4]) + f" q{i}"
            embedder.vectors[qtext] = q
            queries.append((qtext, q))
        warm_text, _ = queries[0]
        t = time.perf_counter()
        search_memory(warm_text, "facts", 10, USER, settings=settings, con=con, method="hybrid", embedder=embedder)
        result["index_build_s"] = time.perf_counter() - t
        index = CACHE.get(con, settings.db_path, "facts", USER, MODEL, DIM)
        timings: dict[str, list[float]] = {"index top-10": [], "search vector": [], "search hybrid": [],
                                           "duckdb cosine (baseline)": []}
        recall = []
        for qtext, q in queries[1:]:
            t = time.perf_counter()
            rows, _ = index.vector_top(q, 10)
            timings["index top-10"].append((time.perf_counter() - t) * 1000)
            exact = np.argsort(-(index.matrix @ q))[:10]
            recall.append(len(set(index.vec_pos[exact].tolist()) & set(rows.tolist())) / 10)
            for method in ("vector", "hybrid"):
                t = time.perf_counter()
                search_memory(qtext, "facts", 10, USER, settings=settings, con=con, method=method, embedder=embedder)
                timings[f"search {method}"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            db.rows(con, "queries/query_facts_cosine_top", user_id=USER, q=q.tolist(), model=MODEL, dim=DIM, k=10)
            timings["duckdb cosine (baseline)"].append((time.perf_counter() - t) * 1000)
    result["timings"] = {k: pct(v) for k, v in timings.items()}
    result["recall_at_10"] = float(np.mean(recall))
    result["path"] = "sketch + exact rescoring" if size > vector_index.EXACT_LIMIT else "exact matmul"
    CACHE.clear()
    return result


def report(results: list[dict], n_queries: int) -> str:
    """The markdown report."""
    lines = [
        "# Search latency (bench/search.py)", "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()} {platform.system()} "
        f"{platform.release()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average at the end {os.getloadavg()[0]:.1f} (the cores are shared: high load inflates times)",
        f"- {n_queries} queries per size after one warm-up; synthetic clustered 384-d facts, one tenant;"
        " query embedding excluded (precomputed vectors)",
        "- target: p95 <= 50 ms at 1M facts", "",
        "| facts | index path | index top-10 p50/p95 | search vector p50/p95 | search hybrid p50/p95 |"
        " duckdb cosine p50/p95 (baseline) | vector speed-up vs baseline (p50) | index recall@10 | index build s | load s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        t = r["timings"]
        base = t["duckdb cosine (baseline)"]
        lines.append(
            f"| {r['size']:,} | {r['path']} | {t['index top-10'][0]:.1f} / {t['index top-10'][1]:.1f} "
            f"| {t['search vector'][0]:.1f} / {t['search vector'][1]:.1f} "
            f"| {t['search hybrid'][0]:.1f} / {t['search hybrid'][1]:.1f} "
            f"| {base[0]:.1f} / {base[1]:.1f} | {base[0] / t['search vector'][0]:.1f}x "
            f"| {r['recall_at_10']:.3f} | {r['index_build_s']:.1f} | {r['load_s']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the benchmark and write bench/SEARCH.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--large", action="store_true", help="Also measure 1,000,000 facts (~6 GB RAM).")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "SEARCH.md")
    args = parser.parse_args()
    sizes = args.sizes + ([1_000_000] if args.large else [])
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="engram-search-") as tmp:
        results = []
        for size in sizes:
            results.append(measure(size, args.queries, rng, Path(tmp)))
            print(report(results, args.queries))
    text = report(results, args.queries)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
