"""Benchmark the MiniLM embedder: sentences/s of the old and the new code path, same run, same vectors.

    python -m bench.perf.embed_throughput                              # 10k sentences, 2 runs of each path
    python -m bench.perf.embed_throughput --sentences 2000 --repeats 1 --json /tmp/embed.json

Baseline (same run): `engram/embed/models.py` as it was at --baseline-ref (git show), called the way
the queue called it there: embed_batch_size texts per embed() call, in the order the rows were read.
New: the current embedder, called the way the current queue calls it (each read of READ_ROWS rows
sorted by text length, then embed_batch_size texts per call). Runs alternate old/new; the report
gives medians, their ratio, the largest vector difference between the paths, and the time a fresh
process needs to build the embedder and embed one query (the `engram search` start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.perf.ingest import corpus_texts
from engram.embed import models, queue
from engram.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
REPORT = Path(__file__).resolve().parent / "EMBED.md"
BASELINE_REF = "1d0140f"  # main before the issue-19 embedder change
QUERY = "What did Caroline do at the LGBTQ support group last week?"

# Run in a fresh interpreter: time to import the embedder module, build it, and embed one query.
STARTUP = """
import json, sys, time
t0 = time.perf_counter()
if sys.argv[1] == "old":
    import types, subprocess
    from engram.store import vectors  # what the old module imports, outside its own timing
    src = subprocess.run(["git", "show", sys.argv[2] + ":engram/embed/models.py"], capture_output=True,
                         text=True, check=True, cwd=sys.argv[3]).stdout
    t0 = time.perf_counter()
    mod = types.ModuleType("old_models"); mod.__file__ = sys.argv[3] + "/engram/embed/models.py"; exec(compile(src, "old_models", "exec"), mod.__dict__)
else:
    import engram.embed.models as mod
t1 = time.perf_counter(); e = mod.MiniLMEmbedder()
t2 = time.perf_counter(); v = e.embed([sys.argv[4]])
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "build": t2 - t1, "query": t3 - t2, "total": t3 - t0}))
"""


def baseline_module(ref: str) -> types.ModuleType:
    """engram/embed/models.py as it was at `ref`, loaded as a module."""
    src = subprocess.run(["git", "show", f"{ref}:engram/embed/models.py"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    module = types.ModuleType("baseline_models")
    module.__file__ = models.__file__  # its VOCAB_PATH is relative to the module's own file
    exec(compile(src, f"{ref}:engram/embed/models.py", "exec"), module.__dict__)
    return module


def sentences(n: int) -> tuple[list[str], str]:
    """n real dialogue turns, cycled when the corpus has fewer distinct ones."""
    texts, source = corpus_texts()
    cycled = f", cycled {n / len(texts):.1f} times" if n > len(texts) else ""
    return [texts[i % len(texts)] for i in range(n)], source + cycled


def old_calls(n: int, batch: int) -> list[list[int]]:
    """Index lists of the old queue's embed() calls: read order, `batch` at a time."""
    return [list(range(i, min(i + batch, n))) for i in range(0, n, batch)]


def new_calls(texts: list[str], batch: int) -> list[list[int]]:
    """Index lists of the current queue's embed() calls: each read sorted by length, then `batch` at a time."""
    calls = []
    for start in range(0, len(texts), queue.READ_ROWS):
        rows = queue.by_length([(i, texts[i]) for i in range(start, min(start + queue.READ_ROWS, len(texts)))])
        calls += [[i for i, _ in rows[j : j + batch]] for j in range(0, len(rows), batch)]
    return calls


def embed_calls(embedder: Any, texts: list[str], calls: list[list[int]]) -> np.ndarray:
    """Vectors in the order of `texts`, embedded call by call."""
    out = np.empty((len(texts), embedder.dim), np.float32)
    for idx in calls:
        out[idx] = embedder.embed([texts[i] for i in idx])
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds of this process, result)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def padding(embedder_tokens: list[int], calls: list[list[int]], chunk_fn: Callable[[list[int]], list]) -> float:
    """Tokens run through the model (padding included) per real token."""
    run = 0
    for idx in calls:
        lengths = [embedder_tokens[i] for i in idx]
        run += sum(len(c) * max(lengths[i] for i in c) for c in chunk_fn(lengths))
    return run / sum(embedder_tokens)


def old_chunks(chunk: int) -> Callable[[list[int]], list]:
    """The old embedder's chunking: sorted by tokens, `chunk` texts at a time."""
    def cut(lengths: list[int]) -> list:
        order = np.argsort(lengths, kind="stable")
        return [order[i : i + chunk] for i in range(0, len(order), chunk)]
    return cut


def throughput(texts: list[str], batch: int, repeats: int, ref: str) -> dict[str, Any]:
    """Alternating old/new runs over the same texts; medians, ratio and the vector differences."""
    old_mod = baseline_module(ref)
    old_load, _, old = timed(old_mod.MiniLMEmbedder)
    new_load, _, new = timed(models.MiniLMEmbedder)
    plans = {"old": (old, old_calls(len(texts), batch)), "new": (new, new_calls(texts, batch))}
    for embedder, calls in plans.values():  # warm-up: first runs allocate the arenas
        embed_calls(embedder, texts[:256], [c for c in old_calls(256, batch)])
    runs: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    vectors: dict[str, np.ndarray] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name, (embedder, calls) in plans.items():
            wall, cpu, vectors[name] = timed(lambda e=embedder, c=calls: embed_calls(e, texts, c))
            runs[name].append((wall, cpu))
            loads.append(os.getloadavg()[0])
            print(f"{name}: {len(texts) / wall:.0f} sentences/s (wall)", file=sys.stderr)
    sample = list(range(0, len(texts), max(1, len(texts) // 200)))[:200]
    alone = np.vstack([new.embed([texts[i]]) for i in sample])
    tokens = [len(e.ids) for e in new._tokenizer.encode_batch(texts)]
    return {
        "n": len(texts), "batch": batch, "repeats": repeats, "baseline_ref": ref,
        "old_load_s": old_load, "new_load_s": new_load, "load_avg": loads,
        "old_runs": runs["old"], "new_runs": runs["new"],
        "old_rate": len(texts) / statistics.median(w for w, _ in runs["old"]),
        "new_rate": len(texts) / statistics.median(w for w, _ in runs["new"]),
        "old_cpu_rate": len(texts) / statistics.median(c for _, c in runs["old"]),
        "new_cpu_rate": len(texts) / statistics.median(c for _, c in runs["new"]),
        "max_abs_diff": float(np.abs(vectors["old"] - vectors["new"]).max()),
        "max_abs_diff_alone": float(np.abs(alone - vectors["new"][sample]).max()),
        "alone_checked": len(sample),
        "old_padding": padding(tokens, plans["old"][1], old_chunks(old_mod.MINILM_CHUNK)),
        "new_padding": padding(tokens, plans["new"][1],
                               lambda lengths: models.length_chunks(lengths, models.MINILM_CHUNK, new.workers)),
        "workers": new.workers, "mean_tokens": statistics.mean(tokens),
    }


# all-MiniLM-L6-v2's encoder: layers, hidden size, feed-forward size (the dense layers are the model's work)
MINILM_LAYERS, MINILM_HIDDEN, MINILM_FFN = 6, 384, 1536
MINILM_CHUNK_ROWS = 16 * 32  # a chunk of 16 texts of ~32 tokens: the shape the runs multiply


def gemm_ceiling(res: dict[str, Any], seconds: float = 2.0) -> dict[str, float]:
    """The fastest the same vectors can come on this machine: the dense layers' float32 work per sentence
    at the one-thread float32 matrix-multiply rate measured now, on every core, nothing else counted.

    The model file keeps int8 weights that onnxruntime turns back into float32 when it loads them (weight
    only quantisation: Cast and Mul, no MatMulInteger), so every run multiplies float32 matrices; int8
    arithmetic would need quantised activations, which change the vectors.
    """
    from threadpoolctl import threadpool_limits

    rows = MINILM_CHUNK_ROWS
    a = np.random.default_rng(0).random((rows, MINILM_HIDDEN), dtype=np.float32)
    b = np.random.default_rng(1).random((MINILM_HIDDEN, MINILM_FFN), dtype=np.float32)
    with threadpool_limits(1):
        a @ b
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            a @ b
            n += 1
        rate = 2 * rows * MINILM_HIDDEN * MINILM_FFN * n / (time.perf_counter() - t0)
    per_token = 2 * MINILM_LAYERS * (4 * MINILM_HIDDEN**2 + 2 * MINILM_HIDDEN * MINILM_FFN)
    per_sentence = per_token * res["mean_tokens"] * res["new_padding"]
    ceiling = (os.cpu_count() or 1) * rate / per_sentence
    return {"gemm_gflops": rate / 1e9, "sentence_gflop": per_sentence / 1e9,
            "new_gflops_per_cpu_s": res["new_cpu_rate"] * per_sentence / 1e9,
            "ceiling_rate": ceiling, "ceiling_ratio": ceiling / res["old_rate"]}


def startup(runs: int, ref: str) -> dict[str, Any]:
    """Medians of import, build and one-query times in fresh processes, old and new alternating."""
    got: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for _ in range(runs):
        for name in got:
            out = subprocess.run([sys.executable, "-c", STARTUP, name, ref, str(ROOT), QUERY], capture_output=True,
                                 text=True, check=True, cwd=ROOT).stdout
            got[name].append(json.loads(out))
    return {name: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for name, rows in got.items()}


def report(res: dict[str, Any], boot: dict[str, Any] | None, source: str, args: argparse.Namespace) -> str:
    """The markdown report."""
    ratio = res["new_rate"] / res["old_rate"]
    cpu_ratio = res["new_cpu_rate"] / res["old_cpu_rate"]
    walls = lambda name: ", ".join(f"{res['n'] / w:.0f}" for w, _ in res[f"{name}_runs"])  # noqa: E731
    lines = [
        "# bench/perf/embed_throughput: MiniLM sentences/s, old path vs new, same vectors",
        "",
        f"- date: {args.date}",
        f"- machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, shared with other "
        f"work: load average {', '.join(f'{x:.1f}' for x in res['load_avg'])} (before and after each run; "
        "above the CPU count means other processes took part of the cores)",
        f"- python {platform.python_version()}; command: `{args.command}`",
        f"- sentences: {res['n']:,} from {source}; mean {res['mean_tokens']:.1f} tokens; "
        f"{res['batch']} texts per embed() call (the queue's embed_batch_size)",
        f"- baseline: `engram/embed/models.py` at {res['baseline_ref']} (git show), called in read order",
        "",
        "| path | sentences/s (wall), median | per CPU-second | each run (wall) | tokens run per real token |",
        "|---|---:|---:|---|---:|",
        f"| old: 2-thread session, ENABLE_ALL, sorted chunks of 16 inside each call of {res['batch']} "
        f"| {res['old_rate']:.0f} | {res['old_cpu_rate']:.0f} | {walls('old')} | {res['old_padding']:.3f} |",
        f"| new: reads sorted by word+punctuation count, chunks of {models.MINILM_CHUNK}, {res['workers']} one-thread runs in "
        f"parallel, ENABLE_BASIC | {res['new_rate']:.0f} | {res['new_cpu_rate']:.0f} | {walls('new')} "
        f"| {res['new_padding']:.3f} |",
        "",
        f"**Ratio new/old: {ratio:.2f}x** by wall clock ({cpu_ratio:.2f}x per CPU-second). "
        f"Target >= 2x: {'met' if ratio >= 2 else 'NOT met'}.",
        "",
        f"Vectors: largest absolute difference old vs new over all {res['n']:,} x 384 values "
        f"{res['max_abs_diff']:.2e}; a text embedded alone vs inside its chunk ({res['alone_checked']} texts) "
        f"{res['max_abs_diff_alone']:.2e}. Model build: old {res['old_load_s']:.2f} s, new {res['new_load_s']:.2f} s.",
    ]
    if ceiling := res.get("ceiling"):
        lines += [
            "",
            "## How far the same vectors can go on this machine",
            "",
            "The model file keeps int8 weights that onnxruntime turns back into float32 when it loads them "
            "(weight-only quantisation), so every run multiplies float32 matrices. The dense layers of "
            f"all-MiniLM-L6-v2 cost {ceiling['sentence_gflop']:.2f} GFLOP per sentence at the tokens run here. "
            f"One thread multiplies float32 matrices of the chunks' shape at {ceiling['gemm_gflops']:.0f} GFLOP/s "
            f"(numpy, measured in this run); the new path does {ceiling['new_gflops_per_cpu_s']:.0f} GFLOP of dense "
            "layers per CPU-second. With every core doing nothing but those multiplications the embedder would "
            f"reach {ceiling['ceiling_rate']:.0f} sentences/s: **{ceiling['ceiling_ratio']:.2f}x the old path**. "
            "Faster than that needs less arithmetic per sentence (int8 activations or a smaller model), and "
            "both change the vectors.",
        ]
    if boot:
        lines += [
            "",
            "## A query in a fresh process (the `engram search` start-up)",
            "",
            "| path | import the embedder module (s) | build the embedder (s) | embed one query (s) | total (s) |",
            "|---|---:|---:|---:|---:|",
            *(f"| {name} | {b['import']:.3f} | {b['build']:.3f} | {b['query']:.3f} | {b['total']:.3f} |"
              for name, b in boot.items()),
            "",
            f"Medians of {args.startup} fresh processes each, old and new alternating. The old module's "
            "import leaves out engram.settings and numpy (imported before its timer starts), so only "
            "build and query compare like for like.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the benchmark, write bench/perf/EMBED.md (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each path, alternating")
    parser.add_argument("--startup", type=int, default=5, help="fresh processes per path (0: skip)")
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument("--json", type=Path, help="also write the numbers as JSON here")
    args = parser.parse_args()
    args.date = datetime.now().strftime("%Y-%m-%d %H:%M")
    args.command = "python -m bench.perf.embed_throughput " + " ".join(sys.argv[1:])
    texts, source = sentences(args.sentences)
    res = throughput(texts, load_settings().embed_batch_size, args.repeats, args.baseline_ref)
    res["ceiling"] = gemm_ceiling(res)
    boot = startup(args.startup, args.baseline_ref) if args.startup else None
    text = report(res, boot, source, args)
    args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps({"throughput": res, "startup": boot, "source": source,
                                         "date": args.date, "command": args.command}, indent=2))
    print(text)


if __name__ == "__main__":
    main()
