"""A reader that closes the pipe early (`engram ... | head`) ends the command quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_closed_pipe_ends_the_command_without_an_error_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(PYTHONPATH=str(ROOT), ENGRAM_EMBEDDER="hash", ENGRAM_DB_PATH=str(tmp_path / "engram.duckdb"),
               PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""))
    (tmp_path / "one.jsonl").write_text(json.dumps(
        {"user_id": "alice", "content": "I like tea", "created_at": "2026-11-01T10:00:00Z"}) + "\n")
    script = ("engram ingest one.jsonl >/dev/null && engram snapshot >/dev/null && "
              "engram sql 'select range as n from range(400000)' --format csv | head -2")
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines() == ["n", "0"]
    assert "error" not in done.stderr.lower() and "Traceback" not in done.stderr, done.stderr
