"""Benchmark the write path: episodes/s through add_episodes, and embeds/s of the hash and MiniLM embedders.

    python -m bench.perf.ingest                               # 50k episodes x 3 batches, 1k MiniLM texts
    python -m bench.perf.ingest --episodes 200000 --batches 5 --minilm-texts 5000

Baseline (same run): a raw DuckDB insert of the same already-validated Arrow table into an empty
store with the same schema and primary key, no validation, hashing or duplicate checks. The ratio
add_episodes / raw says what validation + hashing + idempotency cost. Texts are LoCoMo turns
(../shared/data) when present, else synthetic; each episode gets a unique suffix.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.sql import named
from engram.embed.models import HashEmbedder, MiniLMEmbedder
from engram.embed.queue import drain
from engram.settings import load_settings
from engram.store import db
from engram.store.ingest import EPISODE_SCHEMA, add_episodes, validate_record

REPORT = Path(__file__).resolve().parent / "INGEST.md"
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
WORDS = ("memory agent user likes green tea coffee paris berlin deploy failed meeting tomorrow project "
         "daughter school vegetarian recipe train noon allergic peanuts colour blue weekend hiking").split()


def corpus_texts() -> tuple[list[str], str]:
    """Real dialogue turns if the shared LoCoMo file is here, else synthetic sentences."""
    if LOCOMO.is_file():
        data = json.loads(LOCOMO.read_text())
        texts = [t["text"] for s in data for k, v in s["conversation"].items()
                 if k.startswith("session_") and isinstance(v, list) for t in v if t.get("text")]
        return texts, f"LoCoMo dev turns ({len(texts)} distinct)"
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))) for _ in range(3000)]
    return texts, "synthetic sentences (3000 distinct)"


def records(texts: list[str], n: int, offset: int) -> list[dict[str, Any]]:
    """n episode records over 20 tenants, unique by a numeric suffix."""
    start = datetime(2024, 1, 1)
    return [
        {
            "user_id": f"user-{i % 20}",
            "content": f"{texts[i % len(texts)]} #{offset + i}",
            "created_at": (start + timedelta(seconds=offset + i)).isoformat(),
            "session_id": f"s{(offset + i) // 40}",
            "role": "user" if i % 2 else "assistant",
            "tags": ["bench"],
        }
        for i in range(n)
    ]


class Rate(tuple):
    """(items per wall-clock second, items per CPU-second of this process, all threads)."""

    def __new__(cls, n: int, wall: float, cpu: float) -> Rate:
        return super().__new__(cls, (n / wall, n / max(cpu, 1e-9)))

    def cells(self) -> str:
        return f"{self[0]:,.0f} | {self[1]:,.0f}"


def timed(fn: Callable[[], Any]) -> tuple[tuple[float, float], Any]:
    """((wall seconds, CPU seconds), result): CPU time is what the shared machine cannot steal."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return (time.perf_counter() - t, time.process_time() - c), out


def bench_ingest(texts: list[str], n: int, batches: int, workdir: Path) -> dict[str, Any]:
    """add_episodes into a growing store, re-ingest of a batch, and the raw-insert baseline."""
    settings = load_settings(db_path=workdir / "ingest.duckdb", embedder="hash")
    rates: list[float] = []
    with db.open_store(settings) as con:
        for b in range(batches):
            batch = records(texts, n, b * n)
            secs, res = timed(lambda batch=batch: add_episodes(batch, settings, con=con))
            assert res.inserted == n, res
            rates.append(Rate(n, *secs))
        again = records(texts, n, (batches - 1) * n)
        dup_secs, dup = timed(lambda: add_episodes(again, settings, con=con))
        assert dup.inserted == 0 and dup.duplicates == n
        stored = con.execute("select count(*) from episodes").fetchall()[0][0]

    # split of one batch: Python validation + hashing, Arrow build (for the baseline's table too)
    batch = records(texts, n, batches * n)
    now = datetime.now(UTC).replace(tzinfo=None)
    val_secs, rows = timed(lambda: [validate_record(r, now) for r in batch])
    for row in rows:
        row.update(embedding=None, embedding_model=None, embedding_dim=None, status="pending_embed")
    arrow_secs, table = timed(lambda: pa.Table.from_pylist(rows, schema=EPISODE_SCHEMA))

    raw_settings = load_settings(db_path=workdir / "raw.duckdb", embedder="hash")
    with db.open_store(raw_settings) as con:
        def raw_insert() -> None:
            with db.transaction(con), db.registered(con, "incoming_episodes", table):
                db.execute(con, named("insert_episodes_raw"))
        raw_secs, _ = timed(raw_insert)
    with db.open_store(settings) as con:  # the same table through add_episodes' SQL, into the full store
        def dedupe_insert() -> None:
            with db.transaction(con), db.registered(con, "incoming_episodes", table):
                db.execute(con, "queries/store/insert_episodes")
        sql_secs, _ = timed(dedupe_insert)
    return {
        "n": n, "batches": batches, "rates": rates, "stored": stored,
        "dup_rate": Rate(n, *dup_secs), "validate_rate": Rate(n, *val_secs),
        "arrow_rate": Rate(n, *arrow_secs), "raw_rate": Rate(n, *raw_secs), "dedupe_sql_rate": Rate(n, *sql_secs),
    }


def bench_embed(texts: list[str], n_hash: int, n_minilm: int, workdir: Path) -> dict[str, Any]:
    """embed() throughput of hash and MiniLM, and the queue (drain) with the hash embedder."""
    hash_texts = [texts[i % len(texts)] for i in range(n_hash)]
    minilm_texts = [texts[i % len(texts)] for i in range(n_minilm)]
    hasher = HashEmbedder(384)
    hash_secs, _ = timed(lambda: [hasher.embed(hash_texts[i:i + 64]) for i in range(0, n_hash, 64)])
    load_secs, minilm = timed(MiniLMEmbedder)
    minilm.embed(minilm_texts[:8])  # warm-up
    minilm_secs, _ = timed(lambda: [minilm.embed(minilm_texts[i:i + 64]) for i in range(0, n_minilm, 64)])
    settings = load_settings(db_path=workdir / "queue.duckdb", embedder="hash")  # default batch size
    add_episodes(records(texts, n_hash, 0), settings)
    drain_secs, done = timed(lambda: drain(settings, hasher))
    assert done == n_hash
    return {
        "n_hash": n_hash, "n_minilm": n_minilm, "hash_rate": Rate(n_hash, *hash_secs),
        "minilm_rate": Rate(n_minilm, *minilm_secs), "minilm_load_s": load_secs[0],
        "drain_rate": Rate(n_hash, *drain_secs),
        "mean_chars": statistics.mean(len(t) for t in minilm_texts),
    }


def report(ing: dict[str, Any], emb: dict[str, Any], source: str, args: argparse.Namespace, total_s: float) -> str:
    """The markdown report."""
    r = [x[0] for x in ing["rates"]]
    c = [x[1] for x in ing["rates"]]
    ratio = statistics.median(r) / ing["raw_rate"][0]
    cpu_ratio = statistics.median(x[1] for x in ing["rates"]) / ing["raw_rate"][1]
    lines = [
        "# bench/perf/ingest: episodes/s and embeds/s",
        "",
        f"- date: {datetime.now().strftime('%Y-%m-%d %H:%M')}",
        f"- machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, shared with other "
        f"work: load average {args.load_before:.1f} before and {os.getloadavg()[0]:.1f} after the run "
        "(a load above the CPU count means these rates are lower than on an idle machine)",
        f"- python {platform.python_version()}; command: `python -m bench.perf.ingest --episodes {args.episodes} "
        f"--batches {args.batches} --hash-texts {args.hash_texts} --minilm-texts {args.minilm_texts}`",
        f"- texts: {source}; mean {emb['mean_chars']:.0f} characters; 20 tenants; total run {total_s:.0f} s",
        "",
        "## Ingest (add_episodes: validate, blake3 content_hash, stable id, one transaction, dedupe)",
        "",
        "| measurement | episodes/s (wall) | per CPU-second |",
        "|---|---:|---:|",
    ]
    for i, rate in enumerate(ing["rates"]):
        lines.append(f"| add_episodes batch {i + 1} of {ing['n']:,} (store holds {i * ing['n']:,} before) "
                     f"| {rate.cells()} |")
    lines += [
        f"| add_episodes re-ingest of {ing['n']:,} duplicates (nothing written) | {ing['dup_rate'].cells()} |",
        f"| part: validate_record + hashing only (Python) | {ing['validate_rate'].cells()} |",
        f"| part: Arrow table build only | {ing['arrow_rate'].cells()} |",
        f"| part: dedupe insert SQL only, into the store of {ing['stored']:,} rows "
        f"| {ing['dedupe_sql_rate'].cells()} |",
        f"| **baseline: raw DuckDB insert of the same Arrow table, empty store** | {ing['raw_rate'].cells()} |",
        "",
        f"Median add_episodes rate {statistics.median(r):,.0f}/s = **{ratio:.2f}x** the raw insert by wall "
        f"clock ({cpu_ratio:.2f}x per CPU-second). Target >= 20,000/s by wall clock: "
        f"{'met by every batch' if min(r) >= 20_000 else f'NOT met by every batch (slowest {min(r):,.0f}/s)'}; "
        f"per CPU-second (roughly what an idle machine shows; it leaves out I/O waits): "
        f"{'met by every batch' if min(c) >= 20_000 else f'NOT met by every batch (slowest {min(c):,.0f}/s)'}.",
        "",
        "## Embeddings",
        "",
        "| embedder | texts | embeds/s (wall) | per CPU-second |",
        "|---|---:|---:|---:|",
        f"| hash (crc32 n-grams, numpy), embed() in batches of 64 | {emb['n_hash']:,} | {emb['hash_rate'].cells()} |",
        "| hash through the queue (drain: read pending, embed, store vectors, mark active; default "
        "batch size) "
        f"| {emb['n_hash']:,} | {emb['drain_rate'].cells()} |",
        f"| minilm (all-MiniLM-L6-v2 int8 ONNX, 2 cores), embed() in batches of 64 | {emb['n_minilm']:,} "
        f"| {emb['minilm_rate'].cells()} |",
        "",
        f"MiniLM model load (with sha256 check): {emb['minilm_load_s']:.2f} s. DESIGN.md expects ~300 "
        "sentences/s for MiniLM on these 2 idle cores (short sentences); under load the ONNX threads get "
        "a fraction of the CPUs. Through the queue, MiniLM embedding time dominates the embed stage.",
        "",
        "## What changed to get here",
        "",
        "- `sql/queries/insert_episodes.sql`: the duplicate check was one `not exists` with "
        "`id = ... or (content_hash, created_at) = ...`; DuckDB cannot hash-join an OR, so it compared "
        "every incoming row with every stored row (2.7k/s with 100k rows stored, falling as the store grew). "
        "Two separate anti-joins are hash joins: flat rate as the store grows.",
        "- `engram/textnorm.py`: `normalize` scanned every character with `unicodedata.category`; now a "
        "regex removes control characters and `str.isprintable()` sends only rare texts (format, private-use, "
        "separator characters) to the scan. Same output (hypothesis test against the reference).",
        "- `engram/embed.py` (MiniLM): texts are embedded in length-sorted chunks of 16 instead of padding "
        "a whole batch to its longest text: about 2x embeds/s on dialogue turns, identical vectors.",
        "- `engram/embedding_queue.py`: each store opening (plus the checkpoint on close, which grows with "
        "the table) served one small batch; now one opening stores what was embedded and reads up to 2,048 "
        "pending rows: about 15x embeds/s through the queue with the hash embedder at 2k rows.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark and write bench/perf/INGEST.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50_000, help="episodes per ingest batch")
    parser.add_argument("--batches", type=int, default=3, help="ingest batches into one growing store")
    parser.add_argument("--hash-texts", type=int, default=20_000)
    parser.add_argument("--minilm-texts", type=int, default=1_000)
    parser.add_argument("--out", type=Path, default=REPORT)
    args = parser.parse_args()
    args.load_before = os.getloadavg()[0]
    texts, source = corpus_texts()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="engram-bench-ingest-") as tmp:
        ing = bench_ingest(texts, args.episodes, args.batches, Path(tmp))
        emb = bench_embed(texts, args.hash_texts, args.minilm_texts, Path(tmp))
    text = report(ing, emb, source, args, time.perf_counter() - t0)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
