"""SIGKILL the nightly run at every stage boundary and mid-write; the re-run must end where an
uninterrupted run ends: same facts, confidences, statuses, sources, events, reviews; no episode lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.store_state import store_state
from engram.store.crash import CRASH_ENV
from tests.consolidation_scenario import seed

ROOT = Path(__file__).resolve().parents[2]
STAGES = "embed,extract,confidence,merge,digest,resolve,deprecate,publish"
CRASH_POINTS = ["embed:episodes:mid_write"] + [
    f"{stage}:{point}"
    for stage in ("extract", "confidence", "merge", "deprecate")
    for point in ("before_write", "mid_write", "after_write")
]


def run_script(env: dict[str, str], crash_at: str | None = None) -> int:
    env = {**env, "PYTHONPATH": str(ROOT)}
    env.pop(CRASH_ENV, None)
    if crash_at:
        env[CRASH_ENV] = crash_at
    proc = subprocess.run([sys.executable, "-m", "tests.reliability.run_tenant_script", STAGES],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr[-2000:]
    return proc.returncode


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, list]:
    """The store after one uninterrupted run."""
    from engram.settings import load_settings

    base = tmp_path_factory.mktemp("reference")
    env = {**os.environ, "ENGRAM_DB_PATH": str(base / "ref.duckdb"), "ENGRAM_EMBEDDER": "hash",
           "ENGRAM_LLM": "none", "ENGRAM_ARCHIVE_DIR": str(base / "archive")}
    settings = load_settings(db_path=env["ENGRAM_DB_PATH"], embedder="hash", llm="none",
                             archive_dir=env["ENGRAM_ARCHIVE_DIR"])
    seed(settings)
    assert run_script(env) == 0
    return store_state(settings)


@pytest.mark.parametrize("crash_at", CRASH_POINTS)
def test_killed_run_then_rerun_equals_uninterrupted(settings, reference, crash_at: str) -> None:
    seed(settings)
    env = dict(os.environ)
    assert run_script(env, crash_at) == -signal.SIGKILL
    assert run_script(env) == 0
    state = store_state(settings)
    for table, rows in reference.items():
        assert state[table] == rows, f"{table} differs after a crash at {crash_at}"
