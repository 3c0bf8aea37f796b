"""Nightly time on LoCoMo dev against a baseline commit, back to back on this machine.

    python -m bench.perf.nightly_time --base c0b626a --repeats 3

Each measurement is a fresh process that ingests the LoCoMo dev conversations into a temporary store
(embeddings from the quality bench's cache, so no model time is timed twice) and times the nightly
stages the quality bench runs (extract, confidence, merge, deprecate; no LLM) over every tenant. The
baseline is the same measurement in a git worktree of --base. One untimed warm-up per checkout first
(the extract stage embeds fact texts the cache has not seen yet); then runs alternate (base, current,
base, ...) so machine load hits both alike; the report gives medians and their ratio, since these
machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"

# Runs inside the measured checkout (PYTHONPATH first): only quality-bench helpers that both the
# baseline and the current tree have. A baseline from before bench/ was split into perf/, quality/
# and fit/ has them as flat modules (bench/quality.py, bench/quality_store.py, ...).
_MEASURE = """
import json, sys, time
from datetime import datetime
from pathlib import Path
try:
    from bench.quality.quality import make_embedder
    from bench.quality.quality_retrieval import locomo_records
    from bench.quality.quality_store import consolidate_tenant, ingest, open_temp_store
except ImportError:  # the flat bench/ of an older checkout
    from bench.quality import make_embedder
    from bench.quality_retrieval import locomo_records
    from bench.quality_store import consolidate_tenant, ingest, open_temp_store
emb = make_embedder("minilm", True)
records = locomo_records(Path(sys.argv[1]))
users = sorted({r["user_id"] for r in records})
store = open_temp_store("nightly-time", emb, "none")
try:
    ingest(store, records, emb)
    t0 = time.perf_counter()
    for u in users:
        consolidate_tenant(store, u, emb, datetime(2026, 11, 24))
    print(json.dumps({"seconds": time.perf_counter() - t0, "tenants": len(users), "episodes": len(records)}))
finally:
    store.close()
"""


def measure(checkout: Path, data: Path) -> dict[str, float]:
    """One timed nightly over the LoCoMo file, in a fresh process importing `checkout` first."""
    env = {"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    proc = subprocess.run([sys.executable, "-c", _MEASURE, str(data)], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"measurement in {checkout} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(base: str, repeats: int, data: Path) -> dict[str, object]:
    """Alternating baseline/current measurements and their medians."""
    with tempfile.TemporaryDirectory(prefix="engram-nightly-base-") as tmp:
        worktree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), base],
                       check=True, capture_output=True)
        try:
            times: dict[str, list[float]] = {"base": [], "current": []}
            for checkout in (worktree, ROOT):  # warm-up, not timed: fills the embedding cache with new fact texts
                measure(checkout, data)
            for _ in range(repeats):
                for name, checkout in (("base", worktree), ("current", ROOT)):
                    times[name].append(measure(checkout, data)["seconds"])
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                           check=False, capture_output=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"base": base, "repeats": repeats, "seconds": times, "median_s": med,
            "ratio": med["current"] / med["base"], "data": str(data)}


def write_report(result: dict[str, object], out: Path) -> None:
    """bench/perf/NIGHTLY_TIME.md: the medians, every run, the machine and the date."""
    med = result["median_s"]
    secs = result["seconds"]
    lines = [
        "# Nightly time on LoCoMo dev, against a baseline commit",
        "",
        f"- command: `python -m bench.perf.nightly_time --base {result['base']} --repeats {result['repeats']}`",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.node()}, {platform.machine()}, "
        f"Python {platform.python_version()}",
        f"- data: {Path(str(result['data'])).name}; stages extract, confidence, merge, deprecate (no LLM), every "
        "tenant, embeddings from the quality cache (one untimed warm-up per checkout); runs alternate so load "
        "hits both alike",
        "",
        "| code | median s | runs (s) |",
        "|---|---|---|",
        f"| baseline {result['base']} | {med['base']:.2f} | {', '.join(f'{x:.2f}' for x in secs['base'])} |",
        f"| current | {med['current']:.2f} | {', '.join(f'{x:.2f}' for x in secs['current'])} |",
        "",
        f"Ratio current / baseline: **{result['ratio']:.2f}x** (issue 17 asks for at most 2x).",
        "",
    ]
    out.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: measure, print the JSON, write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="c0b626a", help="Baseline commit (default: the code before issue 17).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "NIGHTLY_TIME.md")
    args = parser.parse_args(argv)
    result = run(args.base, args.repeats, args.data)
    print(json.dumps(result, indent=1))
    write_report(result, args.out)


if __name__ == "__main__":
    main()
