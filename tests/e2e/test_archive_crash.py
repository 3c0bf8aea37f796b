"""A process killed (SIGKILL) at each step of the archive, then a normal run: every row live or archived once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engram.archive.nightly import archive_due
from engram.archive.restore import restore
from engram.store import db
from engram.store.crash import CRASH_ENV
from tests.archive_scenario import (
    AS_OF,
    DUE,
    OTHER,
    TABLE_KEYS,
    USER,
    archived_ids,
    live_ids,
    parquet_ids,
    seed,
    snapshot,
    violations,
)

ROOT = Path(__file__).resolve().parents[2]
# the state a kill at each step leaves: manifest statuses and parquet files in the archive glob
STEPS = {
    "after_intent": (["writing"], 0),
    "after_write": (["writing"], 1),
    "after_export": (["exported"] * 6, 6),
    "during_finalize": (["exported"] * 6, 6),
    "after_finalize": (["exported"] * 3 + ["finalized"] * 3, 6),
}


def run_driver(settings, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    env.update(ENGRAM_DB_PATH=str(settings.db_path), ENGRAM_ARCHIVE_DIR=str(settings.archive_dir),
               ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none", PYTHONPATH=str(ROOT))
    if crash_at:
        env[CRASH_ENV] = f"archive:{crash_at}"
    return subprocess.run([sys.executable, "-m", "tests.e2e.archive_crash_driver", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def assert_each_row_once(settings) -> None:
    """Due rows are archived exactly once (index and parquet glob) and not live; the others are live."""
    archive_dir = Path(settings.archive_dir)
    with db.open_store(settings) as con:
        assert violations(con) == {}
        for (user, table), due in DUE.items():
            assert archived_ids(con, table, user) == sorted(due)
            assert parquet_ids(archive_dir, table, user) == sorted(due)
            assert live_ids(con, table, user).isdisjoint(due)
        assert live_ids(con, "facts", USER) == {"f_active", "f_dep_new", "f_top", "f_mid"}
        statuses = {s for (s,) in con.execute("select distinct status from archive_exports").fetchall()}
        assert statuses <= {"finalized", "abandoned"}
        finalized = [x for (x,) in con.execute("select export_id from archive_exports where status = 'finalized'"
                                               ).fetchall()]
    assert len(finalized) == 6
    assert all((archive_dir / "_manifest" / f"{x}.json").is_file() for x in finalized)
    with db.open_store(settings) as con:
        events = con.execute("select fact_id, count(*) from fact_events where action = 'archived' group by 1"
                             ).fetchall()
    assert sorted(f for f, n in events if n == 1) == sorted(DUE[(USER, "facts")] | DUE[(OTHER, "facts")])
    assert not [p for p in archive_dir.rglob("*") if ".tmp-" in p.name]


@pytest.mark.parametrize("step", STEPS)
def test_killed_archive_run_then_normal_run_archives_each_row_once(settings, step: str) -> None:
    seed(settings)
    killed = run_driver(settings, "archive", "run-killed", crash_at=step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    statuses, files = STEPS[step]
    with db.open_store(settings) as con:
        assert sorted(s for (s,) in con.execute("select status from archive_exports").fetchall()) == statuses
        live_facts = live_ids(con, "facts", USER) | live_ids(con, "facts", OTHER)
    assert len(list(Path(settings.archive_dir).rglob("*.parquet"))) == files
    assert len(live_facts) == (11 - 1 if step == "after_finalize" else 11)  # only the first tenant's batch left
    archive_due(settings, None, AS_OF, "run-next")
    assert_each_row_once(settings)
    again = archive_due(settings, None, AS_OF, "run-after")
    assert again["files"] == 0 and again["resumed_rows"] == 0
    assert_each_row_once(settings)


def test_killed_restore_then_normal_restore_brings_each_row_back_once(settings) -> None:
    seed(settings)
    with db.open_store(settings) as con:
        before = {t: snapshot(con, t) for t in TABLE_KEYS}
    archive_due(settings, None, AS_OF, "run-1")
    killed = run_driver(settings, "restore", crash_at="during_restore")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])  # rolled back
    done = run_driver(settings, "restore")
    assert done.returncode == 0, done.stderr[-2000:]
    restore(settings, OTHER)
    with db.open_store(settings) as con:
        assert {t: snapshot(con, t) for t in TABLE_KEYS} == before
        assert violations(con) == {}
