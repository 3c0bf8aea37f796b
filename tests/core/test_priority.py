"""Background work (the night, the embedding worker) gives up CPU priority; a search never does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _niceness_after(code: str, env: dict[str, str] | None = None) -> list[int]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, **(env or {})}, timeout=600)
    return [int(x) for x in out.stdout.split()]


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no process niceness on this platform")
def test_yield_cpu_reaches_the_niceness_once_and_never_lowers_it() -> None:
    base = os.nice(0)
    got = _niceness_after(
        "import os; from engram.priority import yield_cpu; "
        "print(yield_cpu(0), yield_cpu(10), yield_cpu(10), yield_cpu(5), os.nice(0))")
    assert got == [base, max(base, 10), max(base, 10), max(base, 10), max(base, 10)]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "nice"), reason="no process niceness on this platform")
def test_the_nightly_flow_runs_at_the_background_niceness_and_a_search_process_does_not(tmp_path: Path) -> None:
    env = {"ENGRAM_DB_PATH": str(tmp_path / "engram.duckdb"), "ENGRAM_EMBEDDER": "hash", "ENGRAM_LLM": "none",
           "ENGRAM_BACKGROUND_NICE": "7", "PREFECT_HOME": str(tmp_path / "prefect"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    base = os.nice(0)
    search = _niceness_after(
        "import os, engram; from engram.query import search_memory; from engram.settings import load_settings; "
        "s = load_settings(); "
        "engram.add_episodes([{'user_id': 'u', 'content': 'I live in Lisbon.'}], s); "
        "search_memory('Lisbon', user_id='u', settings=s); print(os.nice(0))", env)
    assert search == [base]
    night = _niceness_after(
        "import os; from engram.flows.nightly import nightly_consolidation; "
        "nightly_consolidation(user_id='u'); print(os.nice(0))", env)
    assert night[-1:] == [max(base, 7)]
