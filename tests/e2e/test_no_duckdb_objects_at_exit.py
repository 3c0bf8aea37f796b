"""No DuckDB object outlives the interpreter (issue 20: "nanobind: leaked instances" lines at exit).

DuckDB 2.0's `_duckdb` extension is built with nanobind, which lists every DuckDB object (connection,
relation, type) still alive when the interpreter shuts down. This DuckDB build only prints that report
when `_duckdb._set_leak_report(True)` is called, so the test turns it on in a subprocess that runs the
library's main paths (ingest, embed queue, every nightly stage, search with the process-wide vector
index cache, passive context, explain, CLI commands) and then exits normally.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

ENABLE = "import _duckdb; _duckdb._set_leak_report(True)\n"

WORKLOAD = textwrap.dedent("""
    from datetime import datetime
    from importlib import resources
    from pathlib import Path

    from typer.testing import CliRunner

    from engram import embed
    from engram.cli.app import app
    from engram.consolidate.runner import run_tenant
    from engram.embed.queue import drain
    from engram.query import search_memory
    from engram.query.explain import explain_fact
    from engram.query.passive import build_context, prefetch_context
    from engram.settings import load_settings
    from engram.store import db
    from engram.store.ingest import add_episodes, read_records

    settings = load_settings()
    numbers, records = read_records(Path(resources.files("engram.data") / "sample_episodes.jsonl"))
    add_episodes(records, settings, line_numbers=numbers)
    drain(settings, embed.from_settings(settings), "episodes", "demo")
    run_tenant(settings, "demo", "run-leak-check", datetime(2026, 12, 1))
    hits = search_memory("what does the user drink in the morning?", user_id="demo", settings=settings)
    assert hits, "search found nothing"
    facts = [h for h in hits if h.table == "facts"]
    if facts:
        explain_fact(settings, "demo", facts[0].id, read_only=True)
    prefetch_context(["what do I drink?"], "demo", settings=settings)
    build_context(["hi"], system="be brief", memories=[])
    for args in (["stats"], ["search", "standup", "--user", "demo"], ["check"], ["explain", "nope", "--user", "demo"]):
        CliRunner().invoke(app, args)
    print("workload done")
""")


def run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env |= {"ENGRAM_DB_PATH": str(tmp_path / "engram.duckdb"), "ENGRAM_ARCHIVE_DIR": str(tmp_path / "archive"),
            "ENGRAM_EMBEDDER": "hash", "ENGRAM_LLM": "none", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module", autouse=True)
def leak_report_available() -> None:
    import _duckdb

    if not hasattr(_duckdb, "_set_leak_report"):
        pytest.skip("this DuckDB build has no _set_leak_report: nanobind's exit report cannot be turned on")


def test_the_report_sees_a_duckdb_object_alive_at_exit(tmp_path: Path) -> None:
    # the control: a connection whose reference is never dropped is reported
    code = ENABLE + "import ctypes, duckdb\nc = duckdb.connect()\nctypes.pythonapi.Py_IncRef(ctypes.py_object(c))\n"
    assert "nanobind: leaked" in run(code, tmp_path).stderr


def test_library_paths_leave_no_duckdb_object_at_exit(tmp_path: Path) -> None:
    done = run(ENABLE + WORKLOAD, tmp_path)
    assert done.returncode == 0 and "workload done" in done.stdout, done.stderr[-3000:]
    leaks = [line for line in done.stderr.splitlines() if "nanobind" in line or "leaked" in line]
    assert not leaks, "\n".join(leaks[:40])
