"""SIGKILL the night inside its stages, rerun it with the same as_of and run id: it must end where an
uninterrupted night ends, every time (issue 44).

    python -m bench.perf.stage_kills                  # 50 random kills (+ targeted ones), seed 44
    python -m bench.perf.stage_kills --kills 6 --out /tmp/STAGE_KILLS.md

One store is seeded with several LoCoMo tenants (dialogue turns of ../shared/data, created_at from
the session dates; hash embedder, no LLM) and kept as a template. The reference is one uninterrupted
night (consolidate_tenants in a subprocess, fixed as_of and run id) on a copy, timed from the moment
the child is about to start the night until it exits. Each round takes a fresh copy, starts the same
night, SIGKILLs it at a moment drawn uniformly inside the reference's duration, reads which stage of
which tenant was under way (the tenant whose lease the dead process holds, and its first stage this
run has not completed), reruns the night to completion and compares the store state
(bench/store_state.py) with the reference. Stages that random timing missed get targeted kills
through the crash-point hook (ENGRAM_TEST_CRASH_AT=<stage>:before_write / :mid_write). The report
replaces bench/perf/STAGE_KILLS.md; the exit status is 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

REPORT = Path(__file__).resolve().parent / "STAGE_KILLS.md"
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
SEED_AS_OF, AS_OF = datetime(2023, 12, 1), datetime(2024, 9, 1)  # 275 days: old facts decay
RUN_ID = "stage-kills"
SIDECARS = (".indexes", ".inbox", ".wal")
BEFORE, AFTER, BETWEEN = "(before the first stage)", "(after the last stage)", "(between tenants)"


@dataclass
class Round:
    """One kill and its rerun: where the kill landed and whether the rerun ended at the reference."""

    how: str                    # "random" or the crash point
    delay: float | None         # seconds after the night started (random kills)
    tenant: str
    stage: str
    differs: list[str] = field(default_factory=list)
    rerun_failed: str = ""


def settings_for(path: Path) -> Any:
    """The settings of the store at `path`: hash embedder, no LLM, archive beside the store, retired rows
    archived the night they retire (retention 0 days: the archive stage has rows to move)."""
    from engram.settings import load_settings

    os.environ.update(ENGRAM_DB_PATH=str(path), ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none",
                      ENGRAM_ARCHIVE_DIR=str(path.parent / "archive"), ENGRAM_RETENTION_DAYS="0")
    return load_settings()


def seed(path: Path, data: Path, tenants: int, turns: int) -> tuple[int, list[str]]:
    """The first `turns` turns of the first `tenants` conversations: two thirds of them consolidated by
    an earlier night (SEED_AS_OF), the last third new; (episodes, tenants)."""
    from engram.consolidate.runner import consolidate_tenants
    from engram.store.ingest import add_episodes
    from engram.store.locomo import locomo_records

    records = locomo_records(data)
    users = sorted({r["user_id"] for r in records})[:tenants]
    per_user = [[r for r in records if r["user_id"] == u][:turns] for u in users]
    settings = settings_for(path)
    add_episodes([r for rs in per_user for r in rs[: turns * 2 // 3]], settings)
    consolidate_tenants(settings, "seed-night", SEED_AS_OF)
    add_episodes([r for rs in per_user for r in rs[turns * 2 // 3:]], settings)
    return sum(len(rs) for rs in per_user), users


def copy_store(template: Path, target_dir: Path) -> Path:
    """A fresh copy of the template store (and its sidecar files and dirs) in an emptied `target_dir`."""
    shutil.rmtree(target_dir, ignore_errors=True)
    target_dir.mkdir(parents=True)
    target = target_dir / template.name
    shutil.copy2(template, target)
    for suffix in SIDECARS:
        side = template.with_name(template.name + suffix)
        if side.is_dir():
            shutil.copytree(side, target.with_name(target.name + suffix))
        elif side.is_file():
            shutil.copy2(side, target.with_name(target.name + suffix))
    return target


def child(path: Path) -> None:
    """Subprocess body: the night over every tenant; 'ready' once imported, exit 1 if a tenant failed."""
    from engram.consolidate.runner import consolidate_tenants, failed_tenants

    settings = settings_for(path)
    print("ready", flush=True)
    failed = failed_tenants(consolidate_tenants(settings, RUN_ID, AS_OF))
    print(json.dumps(failed), flush=True)
    sys.exit(1 if failed else 0)


def start_night(path: Path, crash_at: str | None = None) -> tuple[subprocess.Popen, float]:
    """Start the night on `path`; returns the process and the moment it was ready to run."""
    from engram.store.crash import CRASH_ENV

    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash_at:
        env[CRASH_ENV] = crash_at
    proc = subprocess.Popen([sys.executable, "-m", "bench.perf.stage_kills", "--child", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.wait()
        raise RuntimeError(f"the night did not start: {line!r} {proc.stderr.read()[-2000:] if proc.stderr else ''}")
    return proc, time.monotonic()


def finish(proc: subprocess.Popen, timeout: float = 600) -> tuple[int, str]:
    """Wait for the night; (exit status, tail of its stderr and stdout)."""
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, (err[-1500:] + out[-500:]).strip()


def run_to_end(path: Path) -> float:
    """One uninterrupted night; its seconds from ready to exit. Raises when it fails."""
    proc, t0 = start_night(path)
    code, tail = finish(proc)
    if code != 0:
        raise RuntimeError(f"the night failed ({code}): {tail}")
    return time.monotonic() - t0


def under_way(path: Path, pid: int, stages: tuple[str, ...], tenants: list[str]) -> tuple[str, str]:
    """(tenant, stage) the killed night `pid` was in, read from a copy of the killed store:
    the tenant whose lease the dead pid holds and its first stage this run has not completed."""
    from bench.sql import named
    from engram.store import db

    probe = copy_store(path, path.parent.parent / "probe")
    with db.open_store(settings_for(probe)) as con:
        leases = db.rows(con, named("stage_kills_leases"))
        completed = db.rows(con, named("stage_kills_completed"), run_id=RUN_ID)
    done: dict[str, set[str]] = {t: set() for t in tenants}
    for user, stage in completed:
        done.setdefault(user, set()).add(stage)
    held = [user for user, holder in leases if holder.endswith(f":{pid}")]
    if held:
        return held[0], next((s for s in stages if s not in done[held[0]]), AFTER)
    if not completed:
        return "", BEFORE
    if all(set(stages) <= d for d in done.values()):
        return "", AFTER
    return "", BETWEEN


WORK_KEYS = {"embed": "episodes", "extract": "facts_created", "confidence": "superseded", "merge": "queued",
             "digest": "digests_created", "resolve": "pending", "deprecate": "deprecated", "archive": "archived_facts",
             "publish": "fact_changes"}


def reference_work(path: Path) -> dict[str, str]:
    """Per stage, what the reference night did over all tenants: '<count name> <sum>'."""
    from bench.sql import named
    from engram.store import db

    with db.open_store(settings_for(path)) as con:
        rows = db.rows(con, named("stage_kills_counts"), run_id=RUN_ID)
    sums: Counter[str] = Counter()
    for stage, counts in rows:
        sums[stage] += int(json.loads(counts or "{}").get(WORK_KEYS.get(stage, ""), 0))
    return {stage: f"{key} {sums[stage]}" for stage, key in WORK_KEYS.items()}


def compare(reference: dict[str, list], state: dict[str, list]) -> list[str]:
    """The tables whose rows differ from the reference's."""
    return [table for table, rows in reference.items() if state[table] != rows]


def first_difference(reference: list, rows: list) -> str:
    """One line on how a table differs: counts and one row that only one side has."""
    only_ref = [r for r in reference if r not in rows][:1]
    only_new = [r for r in rows if r not in reference][:1]
    return f"{len(reference)} vs {len(rows)} rows; only in reference: {only_ref}; only after the rerun: {only_new}"


def kill_round(template: Path, work: Path, reference: dict[str, list], how: str, delay: float | None,
               stages: tuple[str, ...], tenants: list[str], details: list[str]) -> Round:
    """Kill one night (after `delay` s, or at crash point `how`), rerun it, compare with the reference."""
    from bench.store_state import store_state

    path = copy_store(template, work / "round")
    proc, _ = start_night(path, None if how == "random" else how)
    if delay is not None:
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    code, tail = finish(proc)
    if code != -signal.SIGKILL:
        tenant, stage = "", AFTER if code == 0 else f"(exited {code})"
    else:
        tenant, stage = under_way(path, proc.pid, stages, tenants)
    r = Round(how, delay, tenant, stage)
    rerun, t_tail = finish(start_night(path)[0])
    if rerun != 0:
        r.rerun_failed = f"rerun exited {rerun}: {t_tail}"
        return r
    state = store_state(settings_for(path))
    r.differs = compare(reference, state)
    details += [f"{how} {delay} {tenant}/{stage} {t}: {first_difference(reference[t], state[t])}" for t in r.differs]
    return r


def targeted_points(rounds: list[Round], stages: tuple[str, ...], per_stage: int) -> list[str]:
    """Crash points for the stages that fewer than `per_stage` kills reached, alternating before/mid write."""
    hit = Counter(r.stage for r in rounds)
    points: list[str] = []
    for stage in stages:
        for i in range(max(0, per_stage - hit[stage])):
            points.append(f"{stage}:{('before_write', 'mid_write')[i % 2]}")
    return points


def campaign(args: argparse.Namespace) -> dict[str, Any]:
    """Seed, reference, random kills, targeted kills; everything the report needs."""
    from bench.store_state import store_state
    from engram.consolidate.runner import STAGES

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="engram-stage-kills-"))
    template = work / "template" / "engram.duckdb"
    template.parent.mkdir()
    episodes, tenants = seed(template, args.data, args.tenants, args.turns)
    ref_path = copy_store(template, work / "reference")
    duration = run_to_end(ref_path)
    reference = store_state(settings_for(ref_path))
    work_done = reference_work(ref_path)
    details: list[str] = []
    t0 = time.monotonic()
    rounds = [kill_round(template, work, reference, "random", round(rng.uniform(0, duration), 3), STAGES, tenants,
                         details) for _ in range(args.kills)]
    for point in targeted_points(rounds, STAGES, args.per_stage):
        rounds.append(kill_round(template, work, reference, point, None, STAGES, tenants, details))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return {"rounds": rounds, "duration": duration, "episodes": episodes, "tenants": tenants, "stages": STAGES,
            "reference_rows": {t: len(rows) for t, rows in reference.items()}, "details": details, "work": work_done,
            "seconds": time.monotonic() - t0}


def stage_table(r: dict[str, Any]) -> list[str]:
    """Kills per stage (random / targeted) and per tenant, with how many reruns ended at the reference."""
    tenants = r["tenants"]
    rows = ["| stage | random kills | targeted kills | " + " | ".join(f"kills in {t}" for t in tenants)
            + " | rerun equal to the reference | the reference night's work (all tenants) |",
            "|---" * (5 + len(tenants)) + "|"]
    for stage in (BEFORE, *r["stages"], BETWEEN, AFTER):
        mine = [x for x in r["rounds"] if x.stage == stage]
        if not mine and stage in (BEFORE, BETWEEN, AFTER):
            continue
        rand = sum(x.how == "random" for x in mine)
        per_tenant = " | ".join(str(sum(x.tenant == t for x in mine)) for t in tenants)
        equal = sum(not x.differs and not x.rerun_failed for x in mine)
        rows.append(f"| {stage} | {rand} | {len(mine) - rand} | {per_tenant} | {equal} of {len(mine)} | "
                    f"{r['work'].get(stage, '')} |")
    return rows


def report(r: dict[str, Any], command: str) -> str:
    """The markdown report."""
    rounds: list[Round] = r["rounds"]
    bad = [x for x in rounds if x.differs or x.rerun_failed]
    differs = Counter(t for x in rounds for t in x.differs)
    targeted = [x for x in rounds if x.how != "random"]
    return "\n".join([
        "# Stage kill campaign: SIGKILL the night inside its stages, rerun with the same as_of",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}  ",
        f"Date: {date.today().isoformat()}",
        "",
        f"Store: {len(r['tenants'])} tenants ({', '.join(r['tenants'])}), {r['episodes']} LoCoMo dialogue turns "
        f"(two thirds consolidated by an earlier night at {SEED_AS_OF.date()}, the rest new), hash embedder, no LLM, "
        f"retention 0 days; the night: as_of {AS_OF.isoformat()}, run id `{RUN_ID}`. The uninterrupted night takes "
        f"{r['duration']:.2f} s (from the child being ready to its exit); reference rows: "
        + ", ".join(f"{t} {n}" for t, n in r["reference_rows"].items()) + ".",
        "",
        f"**{len(rounds)} kills** ({len(rounds) - len(targeted)} at a random moment uniform in the reference's "
        f"duration, {len(targeted)} targeted at a crash point), each followed by a rerun with the same as_of and "
        f"run id: **{len(rounds) - len(bad)} equal to the uninterrupted night, {len(bad)} not**"
        + (f" (tables differing: {dict(differs)})" if differs else "") + f". Campaign time {r['seconds']:.0f} s.",
        "",
        *stage_table(r),
        "",
        "Where a kill landed is read from a copy of the killed store: the tenant whose lease the dead",
        "process holds and that tenant's first stage this run had not completed. Targeted kills",
        "(ENGRAM_TEST_CRASH_AT=<stage>:before_write / :mid_write) go to stages that random timing reached",
        "fewer than twice; the hook fires in the first tenant with work. Compared per table: facts, fact_sources,",
        "fact_events, llm_reviews, episodes, runs, without wall-clock columns (bench/store_state.py, the same",
        "state the crash tests compare; an archived event's created_at is the wall clock of the move, so it is",
        "left out too).",
        *([""] + ["Mismatches:", ""] + [f"- {d}" for d in r["details"]]
          + [f"- {x.how} {x.tenant}/{x.stage}: {x.rerun_failed}" for x in bad if x.rerun_failed] if bad else []),
        "",
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=50, help="random kills (targeted ones are added)")
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--tenants", type=int, default=3)
    ap.add_argument("--turns", type=int, default=150, help="dialogue turns per tenant")
    ap.add_argument("--per-stage", type=int, default=2, help="kills every stage gets at least")
    ap.add_argument("--data", type=Path, default=LOCOMO)
    ap.add_argument("--out", type=Path, default=REPORT)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    result = campaign(args)
    command = "python -m bench.perf.stage_kills " + " ".join(sys.argv[1:])
    text = report(result, command.strip())
    args.out.write_text(text)
    print(text)
    sys.exit(1 if any(x.differs or x.rerun_failed for x in result["rounds"]) else 0)


if __name__ == "__main__":
    main()
