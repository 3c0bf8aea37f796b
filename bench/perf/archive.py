"""Benchmark the verified archive: rows/s exported and finalized, archive size vs live size.

    python -m bench.perf.archive                    # 100k retired facts (+ 100k fact_sources)
    python -m bench.perf.archive --rows 1000000     # the 1M-row run of the issue (a few minutes, ~3 GB disk)

Synthetic facts (384-d float32 unit embeddings, ~80-character texts) are inserted via Arrow, most
of them deprecated long ago. Baselines measured in the same run: an unverified export (the same
query streamed to zstd parquet with pyarrow, no hash, no read-back, no manifest) and an unsafe
purge (plain deletes on a copy of the store, nothing exported).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.sql import named
from engram.archive import ops as archive
from engram.archive.files import BATCH_ROWS, verify
from engram.archive.restore import restore
from engram.settings import load_settings
from engram.store import db

DIM = 384
USER = "bench-user"
AS_OF = datetime(2026, 3, 1, 3, 0, 0)
REPORT = Path(__file__).resolve().parent / "ARCHIVE.md"
CHUNK = 100_000


def seed(settings, rows: int, live_share: float) -> int:
    """Insert `rows` facts (a live_share of them active) with one fact_sources row each; returns retired count."""
    rng = np.random.default_rng(0)
    old = AS_OF - timedelta(days=90)
    retired = 0
    with db.open_store(settings) as con:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            vecs = rng.standard_normal((n, DIM)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            ids = [f"f{start + i:09d}" for i in range(n)]
            status = np.where(rng.random(n) < live_share, "active", "deprecated")
            retired += int((status == "deprecated").sum())
            facts = pa.table({
                "id": ids, "user_id": [USER] * n,
                "text": [f"synthetic fact number {start + i} about topic {i % 97} with some filler words" for i in range(n)],
                "confidence": rng.random(n), "status": status,
                "asserted_at": pa.array([old] * n, pa.timestamp("us")),
                "created_at": pa.array([old] * n, pa.timestamp("us")),
                "last_updated": pa.array([old] * n, pa.timestamp("us")),
                "last_reinforced_at": pa.array([old] * n, pa.timestamp("us")),
                "confidence_at": pa.array([old] * n, pa.timestamp("us")),
                "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM).cast(pa.list_(pa.float32())),
                "embedding_model": ["bench"] * n, "embedding_dim": pa.array([DIM] * n, pa.int32()),
                "content_hash": [f"h{start + i}" for i in range(n)],
            })
            sources = pa.table({"user_id": [USER] * n, "fact_id": ids, "episode_id": [f"e{start + i}" for i in range(n)],
                                "relation": ["extracted_from"] * n, "similarity": rng.random(n)})
            with db.transaction(con):
                with db.registered(con, "bench_facts", facts):
                    con.execute("insert into facts by name select * from bench_facts")
                with db.registered(con, "bench_sources", sources):
                    con.execute("insert into fact_sources by name select * from bench_sources")
        con.execute("checkpoint")
    return retired


def unverified_export(settings, out: Path, cutoff: datetime) -> tuple[float, int]:
    """Baseline: the same due rows streamed to parquet with no hash, read-back or manifest."""
    start = time.perf_counter()
    rows = 0
    with db.open_store(settings) as con:
        due = archive.due_rows(con, USER, {"facts": ["deprecated"]}, cutoff)
        with db.registered(con, "archive_keys", due.select("user_id", "id").to_arrow()):
            for table in ("facts", "fact_sources"):
                reader = con.sql(db.sql(f"queries/archive/archive_export_{table}"), params={"user_id": USER}).to_arrow_reader(BATCH_ROWS)
                with pq.ParquetWriter(out / f"{table}.parquet", reader.schema, compression="zstd") as writer:
                    for batch in reader:
                        writer.write_batch(batch, row_group_size=BATCH_ROWS)
                        rows += batch.num_rows
    return time.perf_counter() - start, rows


def unsafe_purge(settings, cutoff: datetime) -> float:
    """Baseline: plain deletes of the retired facts and their sources, nothing exported."""
    start = time.perf_counter()
    with db.open_store(settings) as con, db.transaction(con):
        db.execute(con, named("archive_bench_delete_retired"), user_id=USER, cutoff=cutoff)
        db.execute(con, named("archive_bench_delete_retired_facts"), user_id=USER, cutoff=cutoff)
    return time.perf_counter() - start


def tree_bytes(path: Path, pattern: str = "*.parquet") -> int:
    return sum(p.stat().st_size for p in path.rglob(pattern))


def main() -> None:
    """Run the benchmark and write bench/perf/ARCHIVE.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="facts in the store")
    parser.add_argument("--live-share", type=float, default=0.1, help="share of facts that stay active")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a temp dir)")
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="engram-bench-archive-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(ENGRAM_DB_PATH=str(work / "store.duckdb"), ENGRAM_ARCHIVE_DIR=str(work / "archive"),
                      ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none")
    settings = load_settings()
    empty = work / "empty.duckdb"
    with db.open_store(settings.model_copy(update={"db_path": empty})) as con:
        con.execute("checkpoint")
    empty_bytes = empty.stat().st_size

    t0 = time.perf_counter()
    retired = seed(settings, args.rows, args.live_share)
    seed_s = time.perf_counter() - t0
    live_bytes = settings.db_path.stat().st_size - empty_bytes
    copy = work / "copy.duckdb"
    shutil.copy(settings.db_path, copy)
    cutoff = AS_OF - timedelta(days=settings.retention_days)

    base_dir = work / "baseline"
    base_dir.mkdir(exist_ok=True)
    base_export_s, base_rows = unverified_export(settings, base_dir, cutoff)
    base_purge_s = unsafe_purge(settings.model_copy(update={"db_path": copy}), cutoff)

    t0 = time.perf_counter()
    exported = archive.export_removals(settings, user_id=USER, as_of=AS_OF, run_id="bench-1")
    export_s = time.perf_counter() - t0
    export_rows = sum(exported["rows"].values())
    facts_file = next(Path(settings.archive_dir) / f["path"] for f in exported["files"] if f["table"] == "facts")
    t0 = time.perf_counter()
    assert verify(facts_file, None, None) == []
    verify_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    finalized = archive.finalize_removal(settings, user_id=USER)
    finalize_s = time.perf_counter() - t0
    final_rows = sum(finalized["rows"].values())
    archive_bytes = tree_bytes(Path(settings.archive_dir))
    with db.open_store(settings) as con:
        con.execute("checkpoint")
        sample = [r[0] for r in con.execute("select row_id from archive_rows where table_name = 'facts'"
                                             " order by hash(row_id) limit 1001").fetchall()]
    t0 = time.perf_counter()
    one = restore(settings, USER, table="facts", ids=sample[:1])
    restore_one_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    restored = restore(settings, USER, table="facts", ids=sample[1:])
    restore_s = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    lines = [
        "# Archive benchmark",
        "",
        f"- date: {datetime.now():%Y-%m-%d %H:%M}; machine: {platform.platform()}, {os.cpu_count()} cpu(s), "
        f"python {platform.python_version()}",
        f"- command: `python -m bench.perf.archive --rows {args.rows}`",
        f"- store: {args.rows:,} facts ({DIM}-d float32 embeddings) + {args.rows:,} fact_sources rows; "
        f"{retired:,} facts retired (deprecated 90 days ago), the rest active; seeding took {seed_s:.1f} s",
        "",
        "| step | rows | seconds | rows/s | baseline (same run) | baseline s | ratio |",
        "|---|---:|---:|---:|---|---:|---:|",
        f"| export (write + read-back verify + manifest) | {export_rows:,} | {export_s:.1f} | {export_rows / export_s:,.0f}"
        f" | unverified parquet write | {base_export_s:.1f} | {export_s / base_export_s:.2f}x |",
        f"| finalize (verify again + index + audit + delete) | {final_rows:,} | {finalize_s:.1f} | "
        f"{final_rows / finalize_s:,.0f} | unsafe delete, nothing exported | {base_purge_s:.1f} | "
        f"{finalize_s / base_purge_s:.2f}x |",
        f"| read-back verification of the facts file alone | {exported['rows']['facts']:,} | {verify_s:.1f} | "
        f"{exported['rows']['facts'] / verify_s:,.0f} | | | |",
        f"| restore 1 fact by id (+ its source) | {sum(one['rows'].values()):,} | {restore_one_s:.1f} | | | | |",
        f"| restore 1,000 random facts by id (+ their sources) | {sum(restored['rows'].values()):,} | {restore_s:.1f}"
        f" | {sum(restored['rows'].values()) / restore_s:,.0f} | | | |",
        "",
        "| size | bytes | MB |",
        "|---|---:|---:|",
        f"| live store before (file minus an empty store) | {live_bytes:,} | {live_bytes / 2**20:,.0f} |",
        f"| archive parquet, zstd ({len(exported['files'])} files) | {archive_bytes:,} | {archive_bytes / 2**20:,.0f} |",
        f"| baseline parquet (same rows) | {tree_bytes(base_dir):,} | {tree_bytes(base_dir) / 2**20:,.0f} |",
        "",
        f"Archive bytes per archived row: {archive_bytes / max(export_rows, 1):,.0f}; live bytes per stored row "
        f"(facts + sources): {live_bytes / (2 * args.rows):,.0f}. The archive holds {retired / args.rows:.0%} of the "
        f"rows in {archive_bytes / max(live_bytes, 1):.0%} of the live store's bytes (random unit embeddings do "
        f"not compress; text and repeated columns do). Peak RSS {rss_mb:,.0f} MB.",
        f"Baseline rows exported: {base_rows:,} (must equal the archived rows: {export_rows:,}).",
        "",
    ]
    REPORT.write_text("\n".join(lines))
    print("\n".join(lines))
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
