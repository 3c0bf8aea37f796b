"""Benchmark the nightly stages on stores of growing size with a fixed nightly delta.

    python -m bench.perf.consolidate                          # 10k and 100k stored facts, 10k new episodes
    python -m bench.perf.consolidate --sizes 10000 100000 1000000

Reports wall time per stage, peak RSS, how time grows with store size, the raw float32 matmul of
the night's episodes against the store (the floor of an exact support search), and compares the
incremental similarity search (new episodes and new facts vs the store: confidence + merge stages)
against an all-pairs recompute of the store measured in the same run (all-pairs is measured up
to --allpairs-max facts and extrapolated quadratically above).
Embedding time is excluded: vectors are given, the dev sentences' MiniLM vectors filled with noised
copies (--vectors real, the default; needs `python -m bench.perf.real_vectors` once) or clustered random unit
vectors (--vectors synthetic). Texts are synthetic either way.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from engram.consolidate import fact_keys
from engram.consolidate import runner as consolidate
from engram.consolidate.context import StageContext
from engram.consolidate.merge_plan import similar_pairs
from engram.index import writer
from engram.settings import load_settings
from engram.store import db

DIM = 384
MODEL = "bench-synthetic-384"
REPORT = Path(__file__).resolve().parent / "CONSOLIDATE.md"


class SyntheticEmbedder:
    """Stands in for the embedder: only provider/model/dim are read by the stages measured."""

    provider, model, dim = "synthetic", MODEL, DIM

    def embed(self, texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        v = rng.standard_normal((len(texts), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


DIGITS = "zero one two three four five six seven eight nine".split()


def spelled(n: int) -> str:
    """A number spelled digit by digit: synthetic texts must not trip the different-value rule."""
    return " ".join(DIGITS[int(d)] for d in str(n))


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def list_array(vectors: np.ndarray) -> pa.ListArray:
    offsets = pa.array(np.arange(0, vectors.size + 1, DIM, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(vectors.ravel(), pa.float32()))


def synthetic_vectors(n_facts: int, n_new: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(stored, new) clustered random unit vectors: 20 facts per centre; half the new episodes near a
    stored fact, half on fresh topics. Nearly uniform in 384-d, the worst case for a graph index."""
    centers = unit(rng.standard_normal((max(n_facts // 20, 1), DIM)))
    fact_vecs = np.empty((n_facts, DIM), np.float32)
    for start in range(0, n_facts, 100_000):
        n = min(100_000, n_facts - start)
        which = rng.integers(0, len(centers), n)
        fact_vecs[start:start + n] = unit(centers[which] + 0.9 * rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(DIM) * 4)
    near = unit(fact_vecs[rng.integers(0, n_facts, n_new // 2)]
                + 0.3 * rng.standard_normal((n_new // 2, DIM)).astype(np.float32) / np.sqrt(DIM) * 2)
    fresh_centers = unit(rng.standard_normal((max(n_new // 40, 1), DIM)))
    fresh = unit(fresh_centers[rng.integers(0, len(fresh_centers), n_new - n_new // 2)]
                 + 0.5 * rng.standard_normal((n_new - n_new // 2, DIM)).astype(np.float32) / np.sqrt(DIM) * 3)
    return fact_vecs, np.vstack([near, fresh])


def real_sentence_vectors(n_facts: int, n_new: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(stored, new) MiniLM vectors of the dev sentences (bench/perf/real_vectors.py): the store filled to
    n_facts with noised copies; half the new episodes restate a stored fact (its vector plus noise),
    half are real sentences held out of the store."""
    from bench.perf import real_vectors

    _, fact_vecs, _, held = real_vectors.held_out(n_facts, n_new - n_new // 2)
    near = unit(fact_vecs[rng.integers(0, n_facts, n_new // 2)]
                + 0.3 * rng.standard_normal((n_new // 2, DIM)).astype(np.float32) / np.sqrt(DIM) * 2)
    return fact_vecs, np.vstack([near, held.astype(np.float32)])


def build_store(path: Path, n_facts: int, n_new: int, as_of: datetime, rng: np.random.Generator,
                vectors: str = "real") -> np.ndarray:
    """A store with n_facts active facts and n_new unconsolidated episodes for tenant 'bench'."""
    fact_vecs, eps = (real_sentence_vectors if vectors == "real" else synthetic_vectors)(n_facts, n_new, rng)
    topics = rng.integers(0, max(n_facts // 20, 1), n_facts)
    settings = load_settings(db_path=path)
    with db.open_store(settings) as con:
        for start in range(0, n_facts, 100_000):
            n = min(100_000, n_facts - start)
            which = topics[start:start + n]
            vecs = fact_vecs[start:start + n]
            ids = [f"f{start + i}" for i in range(n)]
            age = rng.uniform(0, 60, n)
            at = [as_of - timedelta(days=float(a)) for a in age]
            table = pa.table({
                "id": ids, "user_id": ["bench"] * n,
                "text": [f"synthetic fact {spelled(start + i)} about topic {spelled(w)}" for i, w in enumerate(which)],
                "confidence": rng.uniform(0.35, 0.95, n), "confidence_at": at, "asserted_at": at,
                "created_at": at, "last_updated": at, "last_reinforced_at": at,
                "embedding": list_array(vecs), "embedding_model": [MODEL] * n, "embedding_dim": [DIM] * n,
                "content_hash": ids,
            })
            with db.transaction(con), db.registered(con, "bench_facts", table):
                con.execute(
                    "insert into facts (id, user_id, text, confidence, confidence_at, asserted_at, created_at,"
                    " last_updated, last_reinforced_at, embedding, embedding_model, embedding_dim, content_hash)"
                    " select * from bench_facts"
                )
        # the night's delta: half near existing facts (support, merges), half on fresh topics
        ids = [f"e{i}" for i in range(n_new)]
        table = pa.table({
            "id": ids, "user_id": ["bench"] * n_new, "content": [f"synthetic episode {spelled(i)}" for i in range(n_new)],
            "created_at": [as_of - timedelta(hours=1)] * n_new, "content_hash": ids,
            "embedding": list_array(eps), "embedding_model": [MODEL] * n_new, "embedding_dim": [DIM] * n_new,
            "status": ["active"] * n_new,
        })
        with db.transaction(con), db.registered(con, "bench_eps", table):
            con.execute(
                "insert into episodes (id, user_id, content, created_at, content_hash, embedding,"
                " embedding_model, embedding_dim, status) select * from bench_eps"
            )
        fact_keys.refresh(con, "bench")  # as a night leaves them: every active fact keyed
    return fact_vecs


def rss_mb() -> float:
    """This process's peak resident set, in MB: VmHWM, the high-water mark of its own address space.

    Not getrusage's ru_maxrss: Linux keeps that across fork and exec, so a night run as a child of the
    store builder reported the builder's peak (11 GB at 1M, where the night itself peaks near 3 GB)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_kb(pid: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


class TreeRss:
    """Samples (every 50 ms) the resident set of this process plus its child processes (the pair rule
    workers, engram.consolidate.rule_pool): VmHWM counts this process alone."""

    def __init__(self) -> None:
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _children(self) -> list[str]:
        """Child processes that are rule workers. A child between fork and exec still shares (vfork) or
        copies this process's pages and reports them as its own RSS: counting it would count them twice
        (one sample did: 3675 MB against ~2.4 GB + 2 x 150 MB)."""
        out: list[str] = []
        for task in Path("/proc/self/task").iterdir():
            try:
                out += (task / "children").read_text().split()
            except OSError:
                pass
        return [pid for pid in out if b"engram.consolidate.rule_pool" in _cmdline(pid)]

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak_kb = max(self.peak_kb, _rss_kb("self") + sum(_rss_kb(c) for c in self._children()))

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def night(path: Path, n_facts: int, search_index: bool) -> dict:
    """The nightly stages measured on a built store (run in its own process)."""
    as_of = datetime(2026, 11, 22, 3, 0)
    settings = load_settings(db_path=path, embedder="hash", llm="none", search_index=search_index,
                             nightly_pair_index=search_index)
    ctx = StageContext(settings, "bench", f"run-bench-{n_facts}", as_of)
    tools = consolidate.Tools(SyntheticEmbedder())
    times, counts = {}, {}
    with TreeRss() as tree, db.held_open(settings):
        for name in ("extract", "confidence", "merge", "deprecate"):
            t = time.perf_counter()
            counts[name] = consolidate.run_stage(ctx, name, tools).counts
            times[name] = time.perf_counter() - t
    return {"times": times, "counts": counts, "peak_rss_mb": rss_mb(), "peak_rss_with_workers_mb": tree.peak_kb / 1024}


def run_size(n_facts: int, n_new: int, allpairs_max: int, workdir: Path, search_index: bool = True,
             vectors: str = "real") -> dict:
    rng = np.random.default_rng(0)
    as_of = datetime(2026, 11, 22, 3, 0)
    path = workdir / f"bench_{n_facts}.duckdb"
    t = time.perf_counter()
    fact_vecs = build_store(path, n_facts, n_new, as_of, rng, vectors)
    build_s = time.perf_counter() - t
    settings = load_settings(db_path=path, embedder="hash", llm="none", search_index=search_index)
    publish_s = 0.0
    if search_index:  # the previous night's publish: the facts index the stages search
        with db.open_store(settings) as con:
            t = time.perf_counter()
            writer.write_tenant(settings, con, "bench", MODEL, DIM, run_id="previous-night", tables=("facts",))
            publish_s = time.perf_counter() - t
    # the night runs in a new process: its peak RSS is the night's, not the store builder's
    proc = subprocess.run([sys.executable, "-m", "bench.perf.consolidate", "--night", str(path), str(n_facts),
                           "--index" if search_index else "--exact"], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    night = json.loads(proc.stdout.strip().splitlines()[-1])
    night["log"] = [line for line in proc.stderr.splitlines() if "WARNING" in line or "pair search" in line][:20]
    for line in night["log"]:
        print(f"night: {line}", file=sys.stderr)
    times, counts = night["times"], night["counts"]
    publish_after_s = 0.0
    if search_index:  # the night's publish stage: the index the next night and the readers use
        with db.open_store(settings) as con:
            t = time.perf_counter()
            writer.write_tenant(settings, con, "bench", MODEL, DIM, run_id=f"run-bench-{n_facts}")
            publish_after_s = time.perf_counter() - t
    # floor: the raw float32 matmul of the night's episodes against the store (what exact support costs)
    q = fact_vecs[: min(n_new, n_facts)].copy()
    t = time.perf_counter()
    for start in range(0, n_facts, 32768):
        q @ fact_vecs[start:start + 32768].T
    matmul_s = time.perf_counter() - t
    gflops = 2 * len(q) * n_facts * DIM / matmul_s / 1e9
    # baseline: the merge candidate search over all pairs, as a batch job that reprocesses everything
    m = min(n_facts, allpairs_max)
    t = time.perf_counter()
    similar_pairs(fact_vecs[:m], fact_vecs[:m], settings.merge_threshold)
    allpairs_s = (time.perf_counter() - t) * (n_facts / m) ** 2
    path.unlink(missing_ok=True)
    return {
        "facts": n_facts, "new": n_new, "build_s": build_s, "times": times, "total_s": sum(times.values()),
        "allpairs_s": allpairs_s, "allpairs_measured_at": m, "peak_rss_mb": night["peak_rss_mb"],
        "peak_rss_with_workers_mb": night["peak_rss_with_workers_mb"], "counts": counts,
        "matmul_s": matmul_s, "gflops": gflops, "load": os.getloadavg()[0], "publish_s": publish_s,
        "search_index": search_index, "publish_after_s": publish_after_s, "vectors": vectors,
    }


def write_report(results: list[dict], args: argparse.Namespace) -> str:
    lines = [
        "# Nightly consolidation benchmark", "",
        f"- date: {datetime.now():%Y-%m-%d %H:%M}", f"- machine: {platform.platform()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}", f"- command: `python -m bench.perf.consolidate --sizes {' '.join(map(str, args.sizes))} --new {args.new} --vectors {args.vectors}`",
        f"- one tenant holds the whole store (the worst case); {args.vectors} 384-d vectors given, so embedding time is excluded",
        "", "| stored facts | new episodes | extract s | confidence s | merge s | deprecate s | total s | raw matmul new x stored s (GFLOP/s) | all-pairs pair search s | all-pairs / incremental (confidence + merge) | peak RSS MB (with rule workers) | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        t = r["times"]
        est = "" if r["allpairs_measured_at"] == r["facts"] else f" (extrapolated from {r['allpairs_measured_at']:,})"
        lines.append(
            f"| {r['facts']:,} | {r['new']:,} | {t['extract']:.1f} | {t['confidence']:.1f} | {t['merge']:.1f} | "
            f"{t['deprecate']:.2f} | {r['total_s']:.1f} | {r['matmul_s']:.1f} ({r['gflops']:.0f}) | {r['allpairs_s']:.1f}{est} | "
            f"{r['allpairs_s'] / (t['confidence'] + t['merge']):.1f}x | {r['peak_rss_mb']:.0f} ({r['peak_rss_with_workers_mb']:.0f}) | "
            f"{r['load']:.1f} |"
        )
    if len(results) > 1:
        a, b = results[0], results[-1]
        growth = (b["total_s"] / a["total_s"]) / (b["facts"] / a["facts"])
        lines += ["", f"Growth: store x{b['facts'] / a['facts']:.0f} -> time x{b['total_s'] / a['total_s']:.1f} "
                  f"(time ratio / size ratio = {growth:.2f}; <= 1 means no worse than linear)."]
    lines += ["", "Stage counts of the largest run:", "", "```"]
    lines += [f"{k}: {v}" for k, v in results[-1]["counts"].items()]
    lines += ["```", ""]
    return "\n".join(lines)


def run_sizes(args: argparse.Namespace, workdir: Path) -> list[dict]:
    """run_size for each of --sizes in `workdir`, each result printed as it comes."""
    results = []
    for n in args.sizes:
        r = run_size(n, args.new, args.allpairs_max, workdir, search_index=not args.exact, vectors=args.vectors)
        print(f"{n:>9,} facts: " + ", ".join(f"{k} {v:.1f}s" for k, v in r["times"].items())
              + f", total {r['total_s']:.1f}s, matmul floor {r['matmul_s']:.1f}s, peak RSS {r['peak_rss_mb']:.0f} MB"
              + f" ({r['peak_rss_with_workers_mb']:.0f} MB with the rule workers)"
              + f", publish before the night {r['publish_s']:.1f}s, after {r['publish_after_s']:.1f}s,"
              + f" all-pairs {r['allpairs_s']:.1f}s,"
              + f" build {r['build_s']:.0f}s", flush=True)
        results.append(r)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--new", type=int, default=10_000)
    parser.add_argument("--allpairs-max", type=int, default=100_000)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--exact", action="store_true", help="Run the night without the published facts index.")
    parser.add_argument("--vectors", choices=("real", "synthetic"), default="real",
                        help="MiniLM vectors of the dev sentences (bench/perf/real_vectors.py) or clustered random ones.")
    parser.add_argument("--json", type=Path, help="Write total_s, matmul_floor_s, peak_rss_mb, ... keyed by size.")
    parser.add_argument("--report", action="store_true", help=f"Rewrite {REPORT.name} with this run.")
    parser.add_argument("--night", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--index", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.night:
        print(json.dumps(night(Path(args.night[0]), int(args.night[1]), not args.exact), default=str))
        return
    # a store of 1M facts and its index take ~3 GB: a workdir made here is removed when the run ends
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="engram-bench-")))
        results = run_sizes(args, workdir)
    if args.json:
        args.json.write_text(json.dumps({str(r["facts"]): {
            "total_s": r["total_s"], "matmul_floor_s": r["matmul_s"], "peak_rss_mb": r["peak_rss_mb"],
            "peak_rss_with_workers_mb": r["peak_rss_with_workers_mb"], "times": r["times"], "publish_s": r["publish_s"], "publish_after_s": r["publish_after_s"],
            "vectors": r["vectors"], "search_index": r["search_index"], "new": r["new"],
            "load": r["load"]} for r in results}, indent=1))
    if args.report:
        REPORT.write_text(write_report(results, args))
        print(f"wrote {REPORT}")
    else:
        print(write_report(results, args))


if __name__ == "__main__":
    main()
