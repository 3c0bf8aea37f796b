"""Concurrent use: writers and readers beside a nightly run, two nightly runs at once, a corrupt store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.store import db
from engram.store.checks import run_checks
from engram.store.fold import fold_inbox
from tests.consolidation_scenario import seed
from tests.reliability.test_reliability_crash import STAGES, store_state

ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_ingest_and_reads_succeed_while_the_nightly_run_writes(settings) -> None:
    seed(settings)
    nightly = spawn("tests.reliability.run_tenant_script", STAGES)
    writer = spawn("tests.reliability.ingest_loop_script", "write", "20")
    reader = spawn("tests.reliability.ingest_loop_script", "read", "40")
    outs = {name: p.communicate(timeout=600) for name, p in
            (("nightly", nightly), ("writer", writer), ("reader", reader))}
    assert nightly.returncode == 0, outs["nightly"][1][-2000:]
    assert writer.returncode == 0, outs["writer"][1][-2000:]
    assert reader.returncode == 0, outs["reader"][1][-2000:]
    # every read finished well inside the lock timeout (30 s): writers hold the file only briefly
    assert float(outs["reader"][0].strip()) < 10.0
    with db.open_store(settings) as con:
        fold_inbox(con, settings)  # what the writer wrote while the night held the store waited in the inbox
        assert con.execute("select count(*) from episodes where user_id = 'writer'").fetchall()[0][0] == 200
        assert all(n == 0 for n in run_checks(con).values())


def test_two_nightly_runs_for_one_tenant_never_both_write(settings, tmp_path) -> None:
    seed(settings)
    first = spawn("tests.reliability.run_tenant_script", STAGES)
    second = spawn("tests.reliability.run_tenant_script", STAGES)
    codes = sorted(p.wait(timeout=600) for p in (first, second))
    assert codes in ([0, 0], [0, 3]), codes  # one refuses cleanly, or they ran one after the other
    state = store_state(settings)
    events = state["fact_events"]
    assert len(events) == len({e[0] for e in events})  # no event written twice
    with db.open_store(settings) as con:
        assert all(n == 0 for n in run_checks(con).values())


def test_corrupt_store_is_reported_and_never_recreated(settings) -> None:
    path = Path(settings.db_path)
    path.write_bytes(b"this is not a duckdb database" * 100)
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "engram.cli.app", "stats"], cwd=path.parent,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "error [db_error]: cannot open store" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize("read_only", [False, True])
def test_lock_wait_is_bounded_and_typed(settings, read_only: bool) -> None:
    """While another process holds the store, a connect gives up after lock_timeout_s with db_error."""
    import time

    code = (
        "import time, sys\n"
        "from engram.store import db\n"
        "t = time.perf_counter()\n"
        "try:\n"
        f"    with db.connect(sys.argv[1], read_only={read_only}, lock_timeout_s=1.0):\n"
        "        print('opened')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, getattr(exc, 'code', ''), round(time.perf_counter() - t, 2), exc)\n"
    )
    with db.open_store(settings):  # this process holds the file lock
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code, str(settings.db_path)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                              timeout=60)
        elapsed = time.perf_counter() - start
    kind, code_, waited, *_ = proc.stdout.split()
    assert (kind, code_) == ("StoreError", "db_error"), proc.stdout + proc.stderr
    assert 1.0 <= float(waited) < 5.0
    assert elapsed < 30
