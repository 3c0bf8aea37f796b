"""Scale-out benchmark: the nightly run over N tenants, one process vs 4 shards on threads vs 2 Dask workers.

Run: python -m bench.perf.scale_out [--tenants 20] [--shards 4] [--workers 2] [--warm-runs 3] [--out bench/perf/SCALE_OUT.md]
Writes bench/perf/SCALE_OUT.md: wall times (ratio to the single-process baseline measured in the same run),
the per-tenant cost without Prefect, and a projection of the machines needed for 1M tenants nightly.
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def _env(db_path: Path, shards: int, dask_address: str | None = None) -> None:
    for name in [n for n in os.environ if n.startswith("ENGRAM_")]:
        del os.environ[name]
    os.environ.update(ENGRAM_DB_PATH=str(db_path), ENGRAM_ARCHIVE_DIR=str(db_path.parent / "archive"),
                      ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none", ENGRAM_SHARDS=str(shards))
    if dask_address:
        os.environ["ENGRAM_DASK_ADDRESS"] = dask_address


def _seed(db_path: Path, shards: int, n_tenants: int) -> int:
    from engram.settings import load_settings
    from engram.store.ingest import add_episodes_routed
    from tests.sharding_seed import episodes

    _env(db_path, shards)
    return add_episodes_routed(episodes(n_tenants), load_settings()).inserted


@contextmanager
def dask_cluster(workers: int, workdir: Path) -> Iterator[str]:
    """`dask scheduler` and `workers` single-thread `dask worker` processes on 127.0.0.1."""
    dask = str(Path(sys.executable).with_name("dask"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    sched_file = workdir / "scheduler.json"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sched_file)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(workers):
            procs.append(subprocess.Popen(
                [dask, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
                 "--no-nanny", "--local-directory", str(workdir / "dask")],
                env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
            # warm the workers' imports (prefect, engram, hdbscan) so the timing is the run, not start-up
            client.run(lambda: __import__("engram.flows.sharded") and None)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _timed_flow(db_path: Path, shards: int, as_of: datetime, dask_address: str | None = None,
                extra_env: dict[str, str] | None = None, loop: dict[str, float] | None = None) -> tuple[float, int]:
    """Wall seconds of one nightly flow run and its tenant count; `loop` (the unsharded flow only) gets the
    seconds from the first tenant's start to the last one's end under "s"."""
    from engram.flows import nightly

    _env(db_path, shards, dask_address)
    os.environ.update(extra_env or {})
    spans: list[tuple[float, float]] = []
    one = nightly.consolidate_one

    def timed_one(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return one(*args, **kwargs)
        finally:
            spans.append((start, time.perf_counter()))

    nightly.consolidate_one = timed_one
    try:
        t0 = time.perf_counter()
        result = nightly.nightly_consolidation(as_of=as_of)
        wall = time.perf_counter() - t0
    finally:
        nightly.consolidate_one = one
    if loop is not None and spans:
        loop["s"] = spans[-1][1] - spans[0][0]
    return wall, len(result["tenants"])


def _per_tenant_cost(work: Path, n_tenants: int, as_of: datetime) -> dict[str, float]:
    """Seconds per tenant without Prefect: one shard, tenants in sequence, store held open or not."""
    from engram.consolidate.runner import STAGES
    from engram.consolidate.shards import consolidate_shard
    from engram.settings import load_settings
    from engram.store.runs import make_run_id

    out = {}
    # reopened: every stage opens the file (ENGRAM_HOLD_STORE_OPEN=false); per_tenant: one open store per
    # tenant (the default of every flow); held_open: one for the whole shard (the sharded flow's default)
    for name, per_tenant, whole_shard in (("reopened", False, False), ("per_tenant", True, False),
                                           ("held_open", True, True)):
        path = work / f"cost-{name}" / "engram.duckdb"
        _seed(path, 1, n_tenants)
        s = load_settings().model_copy(update={"hold_store_open": per_tenant})
        t0 = time.perf_counter()
        consolidate_shard(s, 0, make_run_id(as_of), as_of, list(STAGES), hold_open=whole_shard)
        out[name] = (time.perf_counter() - t0) / n_tenants
    return out


PER_STAGE_ENV = {"ENGRAM_NIGHTLY_TASKS": "stage", "ENGRAM_HOLD_STORE_MAX_S": "0"}
TARGET_S = 0.25  # issue 19: the default flow's wall time per tenant


def run(n_tenants: int, shards: int, workers: int, warm_runs: int = 3) -> dict[str, Any]:
    """Measure every variant on fresh copies of the same synthetic tenants."""
    from prefect.testing.utilities import prefect_test_harness

    from tests.sharding_seed import AS_OF

    work = Path(tempfile.mkdtemp(prefix="engram-scale-out-"))
    atexit.register(shutil.rmtree, work, True)  # the stores are removed when the run ends
    res: dict[str, Any] = {"tenants": n_tenants, "shards": shards, "workers": workers,
                           "load_before": os.getloadavg()[0]}
    res["episodes"] = _seed(work / "single" / "engram.duckdb", 1, n_tenants)
    _seed(work / "threads" / "engram.duckdb", shards, n_tenants)
    _seed(work / "dask" / "engram.duckdb", shards, n_tenants)
    for name in ("per-stage", *(f"single-warm-{i}" for i in range(warm_runs))):
        _seed(work / name / "engram.duckdb", 1, n_tenants)
    _seed(work / "empty" / "engram.duckdb", 1, 0)
    res["per_tenant_s"] = _per_tenant_cost(work, n_tenants, AS_OF)
    with prefect_test_harness(server_startup_timeout=120):
        # the default flow first, as before issue 19's change: it also pays the harness's first flow run
        res["single_s"], _ = _timed_flow(work / "single" / "engram.duckdb", 1, AS_OF)
        # the same run, the design before: one task per stage per tenant, the store reopened per tenant
        res["per_stage_s"], _ = _timed_flow(work / "per-stage" / "engram.duckdb", 1, AS_OF,
                                            extra_env=PER_STAGE_ENV)
        # the default flow, harness warm, several times (each on a fresh copy): this host's noise is the
        # size of the differences measured, so the report gives the median and every run
        walls, loops = [], []
        for i in range(warm_runs):
            loop: dict[str, float] = {}
            walls.append(_timed_flow(work / f"single-warm-{i}" / "engram.duckdb", 1, AS_OF, loop=loop)[0])
            loops.append(loop.get("s"))
        res["single_warm_runs_s"], res["single_warm_s"] = walls, statistics.median(walls)
        if all(loops):
            res["single_warm_loop_runs_s"], res["single_warm_loop_s"] = loops, statistics.median(loops)
        res["empty_s"], _ = _timed_flow(work / "empty" / "engram.duckdb", 1, AS_OF)  # the per-run fixed cost
        res["threads_s"], _ = _timed_flow(work / "threads" / "engram.duckdb", shards, AS_OF)
        with dask_cluster(workers, work) as address:
            res["dask_s"], done = _timed_flow(work / "dask" / "engram.duckdb", shards, AS_OF, address)
    assert done == n_tenants, done
    res["load_after"] = os.getloadavg()[0]
    return res


def projection(per_tenant_s: float, tenants: int = 1_000_000, window_h: float = 4.0, cores: int = 16,
               efficiency: float = 0.7, heavier: float = 3.0) -> dict[str, float]:
    """Machines for `tenants` nightly in `window_h` hours: cost per tenant x heavier-night factor / capacity."""
    core_seconds = tenants * per_tenant_s * heavier
    capacity = window_h * 3600 * cores * efficiency
    return {"core_hours": core_seconds / 3600, "machines": core_seconds / capacity}


def report(res: dict[str, Any]) -> str:
    """The markdown report."""
    base = res["single_s"]
    held, reopened = res["per_tenant_s"]["held_open"], res["per_tenant_s"]["reopened"]
    proj = projection(held)
    proj_re = projection(reopened)
    shards_for_1m = 4096
    rows = [
        ("single process, 1 shard (nightly_consolidation, baseline)", base),
        (f"{res['shards']} shards, thread pool (sharded_nightly)", res["threads_s"]),
        (f"{res['shards']} shards, Dask: 1 scheduler + {res['workers']} single-thread workers", res["dask_s"]),
    ]
    lines = [
        "# Scale out: the nightly run on threads vs a Dask cluster",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `python -m bench.perf.scale_out "
        f"--tenants {res['tenants']} --shards {res['shards']} --workers {res['workers']}` on "
        f"{platform.platform()}, Python {platform.python_version()}, os.cpu_count() = {os.cpu_count()}. "
        "**The machine's 2 cores are shared with other engineers' jobs, so the numbers are noisy, and 2 Dask "
        "workers on 2 cores cannot beat a thread pool on the same 2 cores**: this measures overhead and "
        "correctness of the distribution, not speed-up. Speed-up comes from more machines. Load average (1 min) "
        f"{res['load_before']:.1f} when the run started, {res['load_after']:.1f} when it ended.",
        "",
        f"Workload: {res['tenants']} tenants, {res['episodes']} synthetic episodes "
        f"({res['episodes'] // res['tenants']} per tenant: 3 topics x 4 phrasings), hash embedder, no LLM, "
        "all 8 stages, fixed as_of. The Dask workers were started and warmed (imports) before timing.",
        "",
        "| run | wall time (s) | ratio to baseline |",
        "|---|---:|---:|",
        *[f"| {name} | {t:.1f} | {t / base:.2f} |" for name, t in rows],
        "",
        "Per-tenant cost without Prefect (engram.consolidate.shards.consolidate_shard, one shard, tenants in sequence):",
        "",
        "| store access | s per tenant |",
        "|---|---:|",
        f"| each stage opens and closes the file (ENGRAM_HOLD_STORE_OPEN=false) | {reopened:.3f} |",
        f"| one open store per tenant (ENGRAM_HOLD_STORE_OPEN=true, the default of every flow) | "
        f"{res['per_tenant_s']['per_tenant']:.3f} |",
        f"| shard held open for the whole shard (sharded_nightly default) | {held:.3f} |",
        "",
        "Most of the per-tenant time with a reopened file is DuckDB open + checkpoint on close (about 40 opens "
        "per tenant per night); holding the store open per tenant (or per shard) lets the stages' connections "
        "share the open database.",
        "",
        *_default_flow_section(res),
        "## Projection: 1M tenants nightly",
        "",
        "Assumptions (state them when quoting the numbers):",
        f"- per-tenant cost = the measured held-open cost, {held:.3f} s, times 3 for a heavier night "
        f"(~50 new episodes per tenant instead of {res['episodes'] // res['tenants']}: clustering and "
        "similarity search grow with episodes and stored facts; small tenants are dominated by fixed per-stage cost);",
        "- a 4-hour nightly window; machines with 16 cores, one single-thread Dask worker per core, 70% "
        "efficiency (stragglers, shard imbalance, scheduler overhead);",
        "- no LLM in the loop (with Gemini the resolve/extract latency is I/O-bound and overlaps; it adds "
        "cost, not cores);",
        f"- {shards_for_1m} shards (the maximum), so ~{1_000_000 // shards_for_1m} tenants per shard file and "
        f"~{1_000_000 / shards_for_1m * held * 3 / 60:.0f} min per shard task: shards, not tenants, are the "
        "unit a worker takes, and there are far more shards than cores.",
        "",
        "| per-tenant cost used | core-hours per night | 16-core machines for a 4 h window |",
        "|---|---:|---:|",
        f"| held open: {held:.3f} s x 3 | {proj['core_hours']:.0f} | {proj['machines']:.1f} |",
        f"| reopened per stage: {reopened:.3f} s x 3 | {proj_re['core_hours']:.0f} | {proj_re['machines']:.1f} |",
        "",
        "So on the order of "
        f"{math.ceil(proj['machines'])} such machines (plus a scheduler) for 1M tenants with the shard "
        "held open, under these assumptions; the storage side (4096 shard files on a filesystem every "
        "worker sees, one writer per file) is described in docs/scale_out.md.",
        "",
    ]
    return "\n".join(lines)


def _runs_text(runs: list[float], n: int) -> str:
    """' (median of 3 runs: 0.251, 0.244, 0.262)': each warm run's seconds per tenant, when there were several."""
    return f" (median of {len(runs)} runs: {', '.join(f'{r / n:.3f}' for r in runs)})" if len(runs) > 1 else ""


def _loop_lines(res: dict[str, Any], n: int) -> list[str]:
    """The warm runs' tenants alone: from the first tenant task's start to the last one's end."""
    if not res.get("single_warm_loop_s"):
        return []
    loop = res["single_warm_loop_s"] / n
    runs = res.get("single_warm_loop_runs_s", [])
    in_runs = f" on the median, in {sum(r / n <= TARGET_S for r in runs)} of {len(runs)} runs" if len(runs) > 1 else ""
    return [
        f"Inside the warm runs, the tenants themselves (the first `consolidate-tenant` task's start to the last one's "
        f"end, Prefect's task runs included) took **{loop:.3f} s per tenant**{_runs_text(runs, n)}: "
        f"{'met' if loop <= TARGET_S else 'not met'} against {TARGET_S} s{in_runs}. "
        "The rest of the wall time is the run's own: Prefect 3's flow engine joins its "
        "heartbeat thread at the end, and that thread sleeps in whole seconds, so a flow run's wall time comes in "
        f"steps of about 1 s (1/{n} s per tenant here) whatever the tenants cost.",
        "",
    ]


def _default_flow_section(res: dict[str, Any]) -> list[str]:
    """The default flow's per-tenant cost with Prefect (issue 19's measure), against the per-stage design."""
    n = res["tenants"]
    cold, warm, before, empty = res["single_s"] / n, res["single_warm_s"] / n, res["per_stage_s"] / n, res["empty_s"]
    old_env = ", ".join(f"{k}={v}" for k, v in PER_STAGE_ENV.items())
    verdict = {True: "met", False: "not met"}
    return [
        f"Per-tenant cost of the default flow with Prefect (wall time / {n} tenants; issue 19 asks <= {TARGET_S} s),"
        " in the order run, each on a fresh copy of the workload:",
        "",
        "| nightly_consolidation | s per tenant | ratio to per-stage tasks |",
        "|---|---:|---:|",
        f"| 1. one task per tenant, store held across tenants (default), first flow run of the harness | {cold:.3f} "
        f"| {cold / before:.2f} |",
        f"| 2. one task per stage per tenant, store reopened per tenant ({old_env}): the design before, "
        "with this version's cheaper stage code | "
        f"{before:.3f} | 1.00 |",
        f"| 3. the default again, harness warm{_runs_text(res.get('single_warm_runs_s', []), n)} | {warm:.3f} | "
        f"{warm / before:.2f} |",
        "",
        f"Target {TARGET_S} s per tenant: **{verdict[cold <= TARGET_S]}** for the first run ({cold:.3f} s, the "
        f"measure of the 1.069 s before), **{verdict[warm <= TARGET_S]}** warm ({warm:.3f} s). A flow run with no "
        f"tenant took {empty:.2f} s (flow start and finish, the heartbeat thread's join, the read snapshot, the "
        f"artifacts): {empty / n:.3f} s of each tenant's share at {n} tenants, thinner with more; per tenant beyond "
        f"it (warm), {(res['single_warm_s'] - empty) / n:.3f} s. The Prefect test harness's server runs on the same "
        "2 cores as the flow: its work for each task run (~50 ms of CPU here) competes with the stages.",
        "",
        *_loop_lines(res, n),
        "Design (issue 19, docs/scale_out.md): the default flow runs one `consolidate-tenant` task per tenant, "
        "its stages as plain functions through the runner (each stage's runs row as before; one log line per tenant "
        "with every stage's counts, the failing stage as an error; a tenant-level retry is safe because completed "
        "stages are skipped from their runs rows and embed/archive/publish only do what is pending), and keeps "
        "the store open across tenants for up to ENGRAM_HOLD_STORE_MAX_S (5 s). Chosen over trimming the "
        "per-stage tasks: a task run costs the flow and the Prefect server the same whatever the stage does, and "
        "8 per tenant were most of the 1.069 s. The stages' fixed cost came down as well: stage records read once "
        "per tenant, a cheaper runs-row write, the archive stage's one-query short-circuit, no path checks inside "
        "a held store, the snapshot task given only the failed tenants.",
        "",
    ]


def main() -> None:
    """Parse flags, run, write the report."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tenants", type=int, default=20)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warm-runs", type=int, default=3, help="Runs of the default flow with the harness warm (median).")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "SCALE_OUT.md")
    a = p.parse_args()
    sys.path.insert(0, str(ROOT))
    res = run(a.tenants, a.shards, a.workers, a.warm_runs)
    a.out.write_text(report(res))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
