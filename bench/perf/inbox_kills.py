"""kill -9 of a writer, the embedding worker or the night at random points: nothing acknowledged is lost or doubled.

    python -m bench.perf.inbox_kills                 # 24 kills (8 of each process), hash embedder
    python -m bench.perf.inbox_kills --kills 30 --out /tmp/INBOX_KILLS.md

Each round starts a writer (add_episodes of one record at a time, half with an explicit id, half
without; it prints a record's content only after the call returned: acknowledged), the embedding worker
(engram.embed.worker.drain_once in a loop) and the night (consolidate_tenants) on one store, and kills
one of the three with SIGKILL after a random 0.3-4 s; the others are then stopped (SIGKILL too). The
writer writes to the inbox whenever the night or the worker holds the store, so kills land in direct
inserts, inbox writes, folds, embedding and every stage of the night. After the last round one
uninterrupted night runs; then every acknowledged record must be in the store exactly once. The report
replaces the section between the markers of bench/perf/INBOX_KILLS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPORT = Path(__file__).resolve().parent / "INBOX_KILLS.md"
ROLES = ("writer", "worker", "night")
TENANTS = 3


def settings_for(path: str) -> Any:
    from engram.settings import load_settings

    os.environ.update(ENGRAM_DB_PATH=path, ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none",
                      ENGRAM_ARCHIVE_DIR=str(Path(path).parent / "archive"))
    return load_settings()


def writer(path: str, round_no: int) -> None:
    """Add one record at a time; print its content once add_episodes returned (acknowledged)."""
    import engram

    settings = settings_for(path)
    for i in range(1_000_000):
        content = f"round {round_no} note {i}: the train leaves at {i % 24}h"
        record: dict[str, Any] = {"user_id": f"tenant-{i % TENANTS}", "content": content,
                                  "created_at": f"2026-11-{1 + round_no % 27:02d}T{i % 24:02d}:{i % 60:02d}:00Z"}
        if i % 2:
            record["id"] = f"r{round_no}-{i}"
        result = engram.add_episodes([record], settings)
        print(f"{content}\t{'inbox' if result.queued else 'store'}", flush=True)


def worker(path: str) -> None:
    from engram.embed.models import HashEmbedder
    from engram.embed.worker import drain_once

    settings = settings_for(path)
    embedder = HashEmbedder(settings.embed_dim)
    while True:
        try:
            drain_once(settings, embedder)
        except Exception:  # noqa: BLE001, S110 - a store held past the short wait: next tick
            pass
        time.sleep(0.1)


def night(path: str) -> None:
    from engram import clock
    from engram.consolidate.runner import consolidate_tenants

    settings = settings_for(path)
    while True:
        consolidate_tenants(settings, clock.run_id("kill", clock.now(), str(time.time_ns())), clock.now())


def spawn(role: str, path: str, round_no: int, log: Any) -> subprocess.Popen:
    args = [sys.executable, "-m", "bench.perf.inbox_kills", "--role", role, "--path", path, "--round", str(round_no)]
    return subprocess.Popen(args, stdout=subprocess.PIPE if role == "writer" else subprocess.DEVNULL,
                            stderr=log, text=True)


def campaign(kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="engram-kills-"))
    path = str(work / "engram.duckdb")
    acknowledged: list[str] = []
    killed: Counter[str] = Counter()
    via: Counter[str] = Counter()  # how each acknowledged record was written: to the store or the inbox
    taken: dict[str, str] = {}  # the same, per record (a lost record's path says where to look)
    log = open(work / "stderr.log", "w")  # noqa: SIM115 - kept for the whole campaign
    order = [ROLES[k % 3] for k in range(kills)]
    rng.shuffle(order)
    t0 = time.monotonic()
    for round_no, victim in enumerate(order):
        procs = {role: spawn(role, path, round_no, log) for role in ROLES}
        time.sleep(rng.uniform(0.3, 4.0) + (1.5 if victim != "writer" else 0.0))  # the first imports take ~1 s
        procs[victim].send_signal(signal.SIGKILL)
        killed[victim] += 1
        time.sleep(0.2)
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
        out, _ = procs["writer"].communicate()
        for p in procs.values():
            p.wait()
        for line in out.splitlines():
            if line.startswith("round ") and "\t" in line:
                content, path_taken = line.split("\t")
                acknowledged.append(content)
                taken[content] = path_taken
                via[path_taken] += 1
    from engram import clock
    from engram.consolidate.runner import consolidate_tenants
    from engram.store import db

    settings = settings_for(path)
    final = consolidate_tenants(settings, "final", clock.now())
    with db.open_store(settings, read_only=True) as con:
        stored = Counter(c for (c,) in con.execute("select content from episodes").fetchall())
        pending = con.execute("select count(*) from episodes where status = 'pending_embed'").fetchall()[0][0]
    lost = [c for c in acknowledged if stored[c] == 0]
    doubled = [c for c, n in stored.items() if n > 1]
    return {"kills": dict(killed), "acknowledged": len(acknowledged), "via": dict(via), "stored": sum(stored.values()),
            "lost": len(lost), "doubled": len(doubled), "lost_sample": [f"{c} (via {taken[c]})" for c in lost[:3]], "doubled_sample": doubled[:3],
            "unembedded_after_night": pending, "final_failed": sorted(u for u, r in final.items() if "failed" in r),
            "seconds": round(time.monotonic() - t0, 1), "store": path}


def report(r: dict[str, Any], command: str) -> str:
    ok = r["lost"] == 0 and r["doubled"] == 0 and not r["final_failed"]
    return "\n".join([
        "# Inbox kill campaign: kill -9 of a writer, the embedding worker or the night",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}  ",
        f"Date: {time.strftime('%Y-%m-%d', time.gmtime())}",
        "",
        "| kills (writer / worker / night) | acknowledged records (written to the store / queued in the inbox) "
        "| lost | stored twice | failed tenants in the final night | result |",
        "|---|---|---|---|---|---|",
        f"| {r['kills'].get('writer', 0)} / {r['kills'].get('worker', 0)} / {r['kills'].get('night', 0)} | "
        f"{r['acknowledged']} ({r['via'].get('store', 0)} / {r['via'].get('inbox', 0)}) | {r['lost']} | "
        f"{r['doubled']} | {len(r['final_failed'])} | {'pass' if ok else 'FAIL'} |",
        "",
        "A record is acknowledged when `add_episodes` returned for it (the writer prints it then). After the",
        "last kill one uninterrupted night folds the inbox; every acknowledged record must then be stored",
        "exactly once (counted by its content, which is unique per record; half the records carry an",
        "explicit id, half are identified by their natural key).",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument("--role", choices=ROLES, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "writer":
        return writer(args.path, args.round)
    if args.role == "worker":
        return worker(args.path)
    if args.role == "night":
        return night(args.path)
    r = campaign(args.kills, args.seed)
    print(json.dumps(r, indent=1))
    args.out.write_text(report(r, f"python -m bench.perf.inbox_kills --kills {args.kills} --seed {args.seed}"))
    if r["lost"] or r["doubled"] or r["final_failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
