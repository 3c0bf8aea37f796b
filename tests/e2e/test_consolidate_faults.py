"""`engram consolidate` under faults: a store removed mid-run, a failing stage, an as_of out of range (issue 44)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample_episodes.jsonl"


def run(cwd: Path, *args: str, **fault: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "FAULT_"))}
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(ROOT), ENGRAM_EMBEDDER="hash",
               ENGRAM_LLM="none", ENGRAM_DB_PATH=str(cwd / "engram.duckdb"), **fault)
    cmd = [sys.executable, "-m", "tests.e2e.consolidate_fault_driver", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    """A store with the sample episodes, copied for each test."""
    cwd = tmp_path_factory.mktemp("base")
    proc = run(cwd, "ingest", str(SAMPLE))
    assert proc.returncode == 0, proc.stderr
    return cwd / "engram.duckdb"


@pytest.fixture
def workdir(ingested: Path, tmp_path: Path) -> Path:
    shutil.copy(ingested, tmp_path / "engram.duckdb")
    return tmp_path


@pytest.mark.parametrize("when", ["start", "extract"])
def test_a_store_removed_during_consolidate_is_no_store_and_never_recreated(workdir: Path, when: str) -> None:
    proc = run(workdir, "consolidate", FAULT_DELETE_AT=when)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "error [no_store]" in proc.stderr and "removed while engram was using it" in proc.stderr
    assert "Traceback" not in proc.stderr and "No tenant had work" not in proc.stdout
    assert not (workdir / "engram.duckdb").exists()  # nothing recreated
    assert not (workdir / "snapshots").exists()  # no (empty) snapshot published


def test_a_failing_stage_is_one_line_and_a_non_zero_exit(workdir: Path) -> None:
    proc = run(workdir, "consolidate", FAULT_RAISE_AT="archive")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Finished in state" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == ["ERROR prefect.flow_runs: tenant demo failed: PermissionError: [Errno 13] Permission denied: "
                     "'/archive/user_id=x'",
                     "error [tenant_failed]: 1 tenant(s) failed (their runs rows name the stage; the next run retries)"]
    assert "Task run failed with exception" in (workdir / "engram.log").read_text()  # the detail is in the log file
