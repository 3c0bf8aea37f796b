"""Candidate on-disk index libraries on real sentence embeddings (issue 19): build, load, latency, recall, RSS.

    python -m bench.perf.real_vectors                       # once: embed the dev sentences
    python -m bench.perf.index_candidates --size 100000 [--queries 200]

Rows: the dev data sets' sentences (bench/perf/real_vectors.py) filled to --size with noised copies.
Queries: other real sentences' vectors (held out of the index) plus noised copies of indexed rows.
Each candidate is built and saved in one process, then loaded (memory-mapped where the library can)
and queried in a fresh process, so load time and RSS are what a new reader pays. Vector recall@10 is
against exact float32 top-10 after exact float32 rescoring of the library's top candidates (what
engram does); lexical candidates are compared on speed only (their scores differ by design).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.perf import real_vectors

WORK = Path("/tmp/engram-bench/candidates")
VECTOR = ("exact", "usearch-f16", "usearch-i8", "faiss-hnsw-sq8", "hnswlib")
LEXICAL = ("numpy-csr", "bm25s", "tantivy")
RESCORE = 64   # candidates taken from the ANN and rescored exactly


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def data(size: int, n_queries: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    return real_vectors.held_out(size, n_queries)


def build(lib: str, size: int, n_queries: int) -> dict:
    texts, vecs, _, _ = data(size, n_queries)
    out = WORK / f"{lib}-{size}"
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "vectors_f32.npy", vecs)
    t = time.perf_counter()
    if lib.startswith("usearch"):
        from usearch.index import Index

        index = Index(ndim=vecs.shape[1], metric="ip", dtype=lib.split("-")[1], connectivity=16,
                      expansion_add=128, expansion_search=64)
        index.add(np.arange(len(vecs), dtype=np.uint64), vecs, threads=2)
        index.save(str(out / "index.usearch"))
    elif lib == "faiss-hnsw-sq8":
        import faiss

        index = faiss.IndexHNSWSQ(vecs.shape[1], faiss.ScalarQuantizer.QT_8bit, 16, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 128
        index.train(vecs[:50_000])
        index.add(vecs)
        faiss.write_index(index, str(out / "index.faiss"))
    elif lib == "hnswlib":
        import hnswlib

        index = hnswlib.Index(space="ip", dim=vecs.shape[1])
        index.init_index(max_elements=len(vecs), ef_construction=128, M=16)
        index.add_items(vecs, np.arange(len(vecs)), num_threads=2)
        index.save_index(str(out / "index.hnswlib"))
    elif lib == "numpy-csr":
        from engram.index.bm25 import postings
        from engram.text.tokens import tokenize

        for key, array in postings([tokenize(t) for t in texts]).items():
            np.save(out / f"{key}.npy", array)
    elif lib == "bm25s":
        import bm25s

        from engram.text.tokens import tokenize

        retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        toks = [tokenize(t) for t in texts]
        retriever.index(_bm25s_tokens(toks), show_progress=False)
        retriever.save(str(out / "bm25s"))
    elif lib == "tantivy":
        import tantivy

        sb = tantivy.SchemaBuilder()
        sb.add_text_field("text", stored=False, tokenizer_name="en_stem")
        sb.add_integer_field("pos", stored=True, fast=True)
        schema = sb.build()
        (out / "tantivy").mkdir(exist_ok=True)
        index = tantivy.Index(schema, path=str(out / "tantivy"))
        writer = index.writer(heap_size=200_000_000, num_threads=2)
        for i, text in enumerate(texts):
            writer.add_document(tantivy.Document(text=text, pos=i))
        writer.commit()
        writer.wait_merging_threads()
    elif lib != "exact":
        raise ValueError(lib)
    return {"build_s": time.perf_counter() - t}


def _bm25s_tokens(toks: list[list[str]]):
    import bm25s

    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in doc] for doc in toks]
    return bm25s.tokenization.Tokenized(ids=ids, vocab=vocab)


def query(lib: str, size: int, n_queries: int) -> dict:
    _, _, qtexts, qvecs = data(size, n_queries)
    rng = np.random.default_rng(2)
    out = WORK / f"{lib}-{size}"
    r0 = rss_mb()
    t = time.perf_counter()
    vecs = np.load(out / "vectors_f32.npy", mmap_mode="r")
    if lib.startswith("usearch"):
        from usearch.index import Index

        index = Index.restore(str(out / "index.usearch"), view=True)
    elif lib == "faiss-hnsw-sq8":
        import faiss

        index = faiss.read_index(str(out / "index.faiss"), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        index.hnsw.efSearch = 64
    elif lib == "hnswlib":
        import hnswlib

        index = hnswlib.Index(space="ip", dim=vecs.shape[1])
        index.load_index(str(out / "index.hnswlib"))
        index.set_ef(64)
    elif lib == "numpy-csr":
        from engram.index.bm25 import Postings

        index = Postings({k: np.load(out / f"{k}.npy", mmap_mode="r") for k in
                          ("bm25_terms", "bm25_offsets", "bm25_docs", "bm25_tfs", "bm25_lengths")})
    elif lib == "bm25s":
        import bm25s

        index = bm25s.BM25.load(str(out / "bm25s"), mmap=True)
    elif lib == "tantivy":
        import tantivy

        index = tantivy.Index.open(str(out / "tantivy"))
        searcher = index.searcher()
    load_s = time.perf_counter() - t
    # half held-out sentences, half noised copies of indexed rows (near-duplicate lookups)
    picks = rng.integers(0, len(vecs), n_queries // 2)
    noisy = np.asarray(vecs[picks]) + 0.3 / np.sqrt(vecs.shape[1]) * rng.normal(size=(len(picks), vecs.shape[1]))
    qs = np.vstack([qvecs[: n_queries - len(picks)], noisy / np.linalg.norm(noisy, axis=1, keepdims=True)]).astype(np.float32)
    times, recall = [], []
    from engram.text.tokens import tokenize

    for i, q in enumerate(qs):
        t = time.perf_counter()
        if lib in VECTOR:
            if lib == "exact":
                sims = vecs @ q
                top = np.argpartition(-sims, 10)[:10]
            else:
                if lib.startswith("usearch"):
                    cand = index.search(q, RESCORE).keys.astype(np.int64)
                elif lib == "faiss-hnsw-sq8":
                    cand = index.search(q[None, :], RESCORE)[1][0]
                else:
                    cand = index.knn_query(q, RESCORE)[0][0].astype(np.int64)
                cand = np.sort(cand[cand >= 0])
                sims = np.asarray(vecs[cand]) @ q
                top = cand[np.argsort(-sims)[:10]]
        else:
            text = qtexts[i % len(qtexts)]
            if lib == "numpy-csr":
                from engram.index.bm25 import bm25_scores

                scores = bm25_scores([index], tokenize(text), [None])[0]
                top = np.argpartition(-scores, 40)[:40]
            elif lib == "bm25s":
                import bm25s

                toks = [index.vocab_dict[w] for w in tokenize(text) if w in index.vocab_dict]
                if toks:
                    scores = index.get_scores(toks)
                    top = np.argpartition(-scores, 40)[:40]
            else:
                toks = " ".join(w for w in text.lower().split() if w.isalnum() and w not in ("and", "or", "not")) or "zzz"
                top = searcher.search(index.parse_query(toks, ["text"]), 40).hits
        times.append((time.perf_counter() - t) * 1000)
        if lib in VECTOR and lib != "exact":
            exact = np.argpartition(-(vecs @ q), 10)[:10]
            recall.append(len(set(exact.tolist()) & set(top.tolist())) / 10)
    return {"load_s": load_s, "p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95)),
            "recall_at_10": float(np.mean(recall)) if recall else None, "rss_mb": rss_mb() - r0,
            "disk_mb": sum(f.stat().st_size for f in out.rglob("*") if f.is_file() and f.name != "vectors_f32.npy") / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--libs", nargs="+", default=list(VECTOR + LEXICAL))
    parser.add_argument("--one", nargs=2, metavar=("STEP", "LIB"), help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.one:
        step, lib = args.one
        fn = build if step == "build" else query
        print(json.dumps(fn(lib, args.size, args.queries)))
        return
    results = {}
    for lib in args.libs:
        row = {}
        for step in ("build", "query"):
            proc = subprocess.run([sys.executable, "-m", "bench.perf.index_candidates", "--size", str(args.size),
                                   "--queries", str(args.queries), "--one", step, lib],
                                  capture_output=True, text=True, check=False)
            if proc.returncode:
                row["error"] = proc.stderr.strip().splitlines()[-1]
                break
            row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        results[lib] = row
        print(lib, row, flush=True)
    print(f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}, size {args.size:,}")
    print("| library | build s | load s | p50 / p95 ms | recall@10 | RSS after load+queries MB | disk MB |")
    print("|---|---|---|---|---|---|---|")
    for lib, r in results.items():
        if "error" in r:
            print(f"| {lib} | error: {r['error']} |||||")
            continue
        rec = f"{r['recall_at_10']:.3f}" if r.get("recall_at_10") is not None else "-"
        print(f"| {lib} | {r['build_s']:.1f} | {r['load_s']:.3f} | {r['p50_ms']:.2f} / {r['p95_ms']:.2f} | {rec} "
              f"| {r['rss_mb']:.0f} | {r['disk_mb']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({str(args.size): results}, indent=1))


if __name__ == "__main__":
    main()
