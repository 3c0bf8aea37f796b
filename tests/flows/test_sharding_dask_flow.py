"""The nightly flow over 4 shards on a local Dask cluster (scheduler + 2 workers on loopback)
gives exactly the rows of a single-process run over a 1-shard store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.flows.nightly import nightly_consolidation
from engram.settings import load_settings
from engram.store import db
from engram.store.ingest import add_episodes_routed
from engram.store.sharding import all_shard_settings, shard_of
from tests.sharding_seed import AS_OF, episodes, tenants

ROOT = Path(__file__).resolve().parents[2]
DASK = str(Path(sys.executable).with_name("dask"))
CHECKS = sorted((ROOT / "sql" / "checks").glob("*.sql"))
COMPARED = {
    "facts": "select * exclude (changed_at) from facts order by user_id, id",  # changed_at: wall clock
    "fact_sources": "select * exclude (created_at) from fact_sources order by all",
    "fact_events": "select * exclude (seq) from fact_events order by user_id, id",  # seq: per-store counter
    "episodes": "select user_id, id, status, consolidated_run_id from episodes order by user_id, id",
    "llm_reviews": "select user_id, id, kind, status, subject_ids from llm_reviews order by user_id, id",
}


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[str]:
    """A Dask scheduler and two single-thread workers on 127.0.0.1; yields the scheduler address."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
         "--scheduler-file", str(sched_file)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(2):
            procs.append(subprocess.Popen(
                [DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard",
                 "--no-nanny", "--local-directory", str(tmp_path / "dask")],
                env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def snapshot(paths: list[Path]) -> dict[str, list]:
    """Compared rows of every store file, plus each tenant's fact_events in seq order."""
    out: dict[str, list] = {name: [] for name in COMPARED}
    order: dict[str, list[str]] = {}
    for path in paths:
        with db.connect(path, read_only=True) as con:
            for name, q in COMPARED.items():
                out[name] += con.execute(q).fetchall()
            for user, event_id in con.execute("select user_id, id from fact_events order by seq").fetchall():
                order.setdefault(user, []).append(event_id)
    return {**{name: sorted(rows, key=repr) for name, rows in out.items()}, "event_order": sorted(order.items())}


@pytest.mark.slow
def test_sharded_nightly_on_dask_equals_single_process(settings, tmp_path, monkeypatch, dask_cluster) -> None:
    # reference: the unchanged single-process flow over a 1-shard store
    add_episodes_routed(episodes(20), settings)
    single = nightly_consolidation(as_of=AS_OF)
    assert sorted(single["tenants"]) == tenants(20)

    # the same episodes over 4 shards, consolidated on the Dask cluster (via the deployment entry point)
    monkeypatch.setenv("ENGRAM_DB_PATH", str(tmp_path / "sharded" / "engram.duckdb"))
    monkeypatch.setenv("ENGRAM_SHARDS", "4")
    monkeypatch.setenv("ENGRAM_DASK_ADDRESS", dask_cluster)
    sharded_settings = load_settings()
    add_episodes_routed(episodes(20), sharded_settings)
    sharded = nightly_consolidation(as_of=AS_OF)

    assert sharded["shards"] == [0, 1, 2, 3]
    assert sharded["run_id"] == single["run_id"]
    assert sorted(sharded["tenants"]) == tenants(20)
    shard_files = [Path(s.db_path) for s in all_shard_settings(sharded_settings)]
    for k, path in enumerate(shard_files):  # each tenant lives in its shard only
        with db.connect(path, read_only=True) as con:
            users = {u for (u,) in con.execute("select distinct user_id from episodes").fetchall()}
            assert users and all(shard_of(u, 4) == k for u in users)
            assert all(not con.execute(p.read_text()).fetchall() for p in CHECKS)
    from distributed import Client

    with Client(dask_cluster, timeout=60) as client:
        executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert len(executed) == 2 and sum(executed.values()) >= 4, executed  # the shards ran on the workers

    got, want = snapshot(shard_files), snapshot([Path(settings.db_path)])
    assert len(want["facts"]) >= 20 * 3 and len(want["fact_events"]) > 0
    for name in [*COMPARED, "event_order"]:
        assert got[name] == want[name], name
