"""Issue 16's ingest scenario at full size, five runs in a row: stored counts must equal the distinct counts.

    python -m bench.perf.reliability [--runs 5] [--out bench/perf/RELIABILITY.md]

Each case gets a fresh temporary store (hash embedder, no LLM). Its distinct records go to
`add_episodes` each given twice in one call (shuffled: a client retrying a batch), then once more in a
second call; the store must then hold exactly the distinct count, and every id a call reported must be
stored. The 5,000 user/assistant pairs without created_at (the assistant saying the same words each
time) are one call and must give 10,000 rows; MCP `add_memory` of 500 memories must store 500. The
numbers replace the section between the repeat-counts markers of bench/perf/RELIABILITY.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.ingest import add_episodes

REPORT = Path(__file__).resolve().parent / "RELIABILITY.md"
START, END = "<!-- repeat-counts:start (python -m bench.perf.reliability) -->", "<!-- repeat-counts:end -->"
T0 = datetime(2024, 1, 1)


@dataclass
class Case:
    """One scenario: how to make its records, how many are distinct, and how they are sent."""

    name: str
    label: str                                   # short name for the timings line
    expected: int
    send: Callable[[Settings, int], list[str]]  # (settings, seed) -> every id the calls reported


def _twice_then_once(records: list[dict[str, Any]]) -> Callable[[Settings, int], list[str]]:
    def send(settings: Settings, seed: int) -> list[str]:
        batch = [dict(r) for r in records] + [dict(r) for r in records]
        random.Random(seed).shuffle(batch)
        first = add_episodes(batch, settings)
        again = add_episodes([dict(r) for r in records], settings)
        return first.ids + again.ids
    return send


def _explicit_ids(n: int) -> list[dict[str, Any]]:
    return [{"user_id": "u", "id": f"ep-{i}", "content": f"turn number {i}",
             "created_at": (T0 + timedelta(seconds=i)).isoformat()} for i in range(n)]


def _shared_created_at(n: int) -> list[dict[str, Any]]:
    return [{"user_id": "u", "content": f"sentence {i}", "created_at": T0.isoformat(), "session_id": "s1",
             "role": "user" if i % 2 else "assistant"} for i in range(n)]


def _texts_and_times(n: int) -> list[dict[str, Any]]:
    return [{"user_id": f"user-{i % 20}", "content": f"memory {i}: note {i * 7919 % 10007}",
             "created_at": (T0 + timedelta(seconds=i)).isoformat(), "session_id": f"s{i // 40}",
             "role": "user" if i % 2 else "assistant"} for i in range(n)]


def _pairs_without_created_at(n_pairs: int) -> Callable[[Settings, int], list[str]]:
    def send(settings: Settings, seed: int) -> list[str]:
        records: list[dict[str, Any]] = []
        for i in range(n_pairs):
            records.append({"user_id": "u", "role": "user", "session_id": "chat", "content": f"question {i}"})
            records.append({"user_id": "u", "role": "assistant", "session_id": "chat", "content": "Sure, noted."})
        return add_episodes(records, settings).ids
    return send


def _mcp_add_memory(n: int) -> Callable[[Settings, int], list[str]]:
    def send(settings: Settings, seed: int) -> list[str]:
        from engram.mcp.tools import BY_NAME, ToolContext

        episodes = [{"content": f"memory {i % 300}", "role": "user"} for i in range(n)]  # 200 texts said twice
        out = BY_NAME["add_memory"].handler(ToolContext(settings=settings, user_id="agent"), {"episodes": episodes})
        return list(out["ids"])
    return send


CASES = [
    Case("20,000 with explicit ids, each given twice, then once more", "explicit ids", 20_000,
         _twice_then_once(_explicit_ids(20_000))),
    Case("20,000 sharing one created_at, each given twice, then once more", "one created_at", 20_000,
         _twice_then_once(_shared_created_at(20_000))),
    Case("100,000 with different texts and times, each given twice, then once more", "texts and times", 100_000,
         _twice_then_once(_texts_and_times(100_000))),
    Case("5,000 user/assistant pairs without created_at (assistant: same words)", "pairs", 10_000,
         _pairs_without_created_at(5_000)),
    Case("MCP add_memory of 500 memories (200 texts said twice)", "MCP", 500, _mcp_add_memory(500)),
]


def run_case(case: Case, seed: int) -> tuple[int, bool, float]:
    """(rows stored, every reported id stored, seconds) for one case on a fresh store."""
    with tempfile.TemporaryDirectory(prefix="engram-reliability-") as tmp:
        settings = load_settings(db_path=Path(tmp) / "engram.duckdb", archive_dir=Path(tmp) / "archive",
                                 embedder="hash", llm="none", shards=1)
        t = time.perf_counter()
        ids = case.send(settings, seed)
        seconds = time.perf_counter() - t
        with db.open_store(settings, read_only=True) as con:
            stored = {r[0] for r in con.execute("select id from episodes").fetchall()}
        return len(stored), set(ids) <= stored, seconds


def report(results: dict[str, list[tuple[int, bool, float]]], runs: int, load: tuple[float, float],
           total_s: float) -> str:
    """The repeat-counts section: stored count per case and run, with the command, machine and date."""
    machine = (f"{platform.platform()}, {os.cpu_count()} CPUs shared with other work (load average "
               f"{load[0]:.1f} before, {load[1]:.1f} after)")
    lines = [
        START,
        "## Repeat counts",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        (f"- command: `python -m bench.perf.reliability --runs {runs}` (engram.store.ingest.add_episodes, hash embedder,"
         " a fresh temporary store per case and run)"),
        f"- machine: {machine}; python {platform.python_version()}, duckdb {duckdb.__version__}",
        f"- total {total_s:.0f} s",
        "",
        "| case | expected | " + " | ".join(f"run {i + 1}" for i in range(runs)) + " | reported ids stored |",
        "|---|---:|" + "---:|" * runs + "---|",
    ]
    for case in CASES:
        got = results[case.name]
        cells = " | ".join(f"{n:,}" + ("" if n == case.expected else " **(wrong)**") for n, _, _ in got)
        ids_ok = "yes" if all(good for _, good, _ in got) else "**no**"
        lines.append(f"| {case.name} | {case.expected:,} | {cells} | {ids_ok} |")
    seconds = "; ".join(f"{c.label}: " + ", ".join(f"{s:.1f}" for _, _, s in results[c.name])
                        for c in CASES)
    verdict = "every run stored exactly the distinct count" if all_ok(results) else "**a run stored the wrong count**"
    lines += ["", f"Seconds per run (the ingest calls only): {seconds}.", "", f"Result: {verdict}.", END]
    return "\n".join(lines) + "\n"


def all_ok(results: dict[str, list[tuple[int, bool, float]]]) -> bool:
    """Whether every run of every case stored exactly the expected count and every reported id."""
    return all(n == c.expected and good for c in CASES for n, good, _ in results[c.name])


def write_section(path: Path, section: str) -> None:
    """Replace the repeat-counts section of path (appended when the markers are absent)."""
    text = path.read_text() if path.exists() else "# Reliability\n"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        text = before + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main() -> None:
    """Run every case --runs times and write the numbers into bench/perf/RELIABILITY.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPORT)
    args = parser.parse_args()
    for name in [n for n in os.environ if n.startswith("ENGRAM_")]:
        del os.environ[name]  # the caller's settings must not change the scenario
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    results: dict[str, list[tuple[int, bool, float]]] = {c.name: [] for c in CASES}
    for run in range(args.runs):
        for case in CASES:
            results[case.name].append(run_case(case, seed=run))
            n, good, s = results[case.name][-1]
            print(f"run {run + 1}: {case.name}: {n:,} stored (expected {case.expected:,}), ids ok {good}, {s:.1f} s",
                  flush=True)
    section = report(results, args.runs, (load_before, os.getloadavg()[0]), time.perf_counter() - t0)
    write_section(args.out, section)
    print(section)
    sys.exit(0 if all_ok(results) else 1)


if __name__ == "__main__":
    main()
