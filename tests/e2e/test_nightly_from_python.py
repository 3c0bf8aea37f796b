"""nightly_consolidation() called from a Python script (not the CLI) runs without an ERROR traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
from engram import add_episodes
from engram.flows.nightly import nightly_consolidation
from engram.settings import load_settings

add_episodes([{"user_id": "alice", "content": "I moved to Lisbon in October.",
               "created_at": "2026-11-20T10:00:00Z"}], load_settings())
result = nightly_consolidation(user_id="alice")
print("facts_created", result["tenants"]["alice"]["extract"]["facts_created"])
"""


def test_nightly_from_python_prints_no_error_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ENGRAM_", "PREFECT_SERVER_ANALYTICS")) and k != "DO_NOT_TRACK"}
    env.update(PYTHONPATH=str(ROOT), ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none", PREFECT_HOME=str(tmp_path / "ph"))
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "facts_created 1" in proc.stdout
    assert "Traceback" not in proc.stderr and "| ERROR" not in proc.stderr, proc.stderr[-3000:]
