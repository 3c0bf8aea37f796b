"""How long readers and writers wait for the store while a nightly run writes.

    python -m bench.perf.concurrency                 # 100k stored facts, 10k new episodes
    python -m bench.perf.concurrency --facts 10000

A reader process opens the store read-only and counts rows in a loop, and a writer process ingests
batches of 10 episodes, both for the whole run; the report gives their wait per operation
(p50/p95/max) next to the same operations on an idle store (the baseline, same run).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from bench.perf.consolidate import SyntheticEmbedder, build_store
from engram.consolidate import runner as consolidate
from engram.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
REPORT = Path(__file__).resolve().parent / "CONCURRENCY.md"

LOOP = """
import json, sys, time
from datetime import datetime, timedelta
from engram.store import db
from engram.store.ingest import add_episodes
from engram.settings import load_settings
import os
mode, path, seconds, stop = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
s = load_settings(db_path=path)
waits, i, end = [], 0, time.monotonic() + seconds
while time.monotonic() < end and not os.path.exists(stop):
    t = time.perf_counter()
    if mode == "read":
        with db.connect(path, read_only=True, lock_timeout_s=60) as con:
            db.rows(con, "queries/store/count_episodes")
    else:
        add_episodes([{"id": f"c{i}-{j}", "user_id": "side", "content": f"side note {i} {j}",
                       "created_at": datetime(2026, 1, 1) + timedelta(seconds=i * 10 + j)} for j in range(10)], s)
    waits.append(time.perf_counter() - t)
    i += 1
    time.sleep(0.02)
print(json.dumps(waits))
"""


def side_load(mode: str, path: Path, seconds: float, stop: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", LOOP, mode, str(path), str(seconds), str(stop)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stats(waits: list[float]) -> dict[str, float]:
    a = np.array(waits) * 1000
    return {"n": len(a), "p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)),
            "max_ms": float(a.max())}


def measure(path: Path, seconds: float) -> dict[str, dict[str, float]]:
    procs = {mode: side_load(mode, path, seconds, path.with_suffix(".never")) for mode in ("read", "write")}
    return {mode: stats(json.loads(p.communicate(timeout=seconds + 600)[0])) for mode, p in procs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=10_000)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="engram-conc-"))
    atexit.register(shutil.rmtree, workdir, True)  # the stores are removed when the run ends
    path = workdir / "conc.duckdb"
    as_of = datetime(2026, 11, 22, 3, 0)
    build_store(path, args.facts, args.new, as_of, np.random.default_rng(0))
    idle = measure(path, 10)
    settings = load_settings(db_path=path, embedder="hash", llm="none")
    stop = workdir / "stop"
    procs = {mode: side_load(mode, path, 10_000, stop) for mode in ("read", "write")}
    t = time.perf_counter()
    consolidate.run_tenant(settings, "bench", "run-conc", as_of, ["extract", "confidence", "merge", "deprecate"],
                           consolidate.Tools(SyntheticEmbedder()))
    run_s = time.perf_counter() - t
    stop.touch()
    busy = {mode: stats(json.loads(p.communicate(timeout=120)[0])) for mode, p in procs.items()}
    lines = [
        "# Waiting for the store during a nightly run", "",
        f"- date: {datetime.now():%Y-%m-%d %H:%M}; machine: {platform.platform()}, {os.cpu_count()} cores",
        f"- store: {args.facts:,} facts, {args.new:,} new episodes; nightly stages took {run_s:.1f} s",
        f"- command: `python -m bench.perf.concurrency --facts {args.facts} --new {args.new}`", "",
        "| operation | store | n | p50 ms | p95 ms | max ms |", "|---|---|---|---|---|---|",
    ]
    for mode, label in (("read", "read-only open + count"), ("write", "ingest 10 episodes")):
        for name, data in (("idle (baseline)", idle), ("during nightly run", busy)):
            s = data[mode]
            lines.append(f"| {label} | {name} | {s['n']} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} | {s['max_ms']:.0f} |")
    lines += ["", "The bound: a reader or writer waits at most as long as the longest single write transaction "
              "of the run (stages compute with the store closed); the store's lock wait gives up with a typed "
              "`db_error` after `ENGRAM_LOCK_TIMEOUT_S` (30 s).", ""]
    REPORT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
