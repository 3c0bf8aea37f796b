"""SIGKILL of `engram consolidate` leaves no Prefect server behind (issue: its temporary server lived on,
re-parented to PID 1, two still alive after 40 minutes)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for the process tree")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_killed_consolidate_takes_its_temporary_prefect_server_with_it(tmp_path: Path) -> None:
    records = tmp_path / "turns.jsonl"
    records.write_text("".join(json.dumps({"user_id": "alice", "content": f"I walk my dog Rex every day {i}",
                                           "created_at": f"2026-01-{i % 28 + 1:02d}T10:00:00Z"}) + "\n"
                               for i in range(60)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "PREFECT_"))}
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(tmp_path / "prefect"),
               PYTHONPATH=str(ROOT), ENGRAM_EMBEDDER="hash")
    exe = shutil.which("engram")
    cmd = [exe] if exe else [sys.executable, "-m", "engram.cli.app"]
    subprocess.run([*cmd, "ingest", str(records)], cwd=tmp_path, env=env, check=True, capture_output=True)

    night = subprocess.Popen([*cmd, "consolidate"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    server = None
    deadline = time.monotonic() + 120
    while server is None and time.monotonic() < deadline and night.poll() is None:
        server = next((c for c in _children(night.pid) if "uvicorn" in _cmdline(c) or "prefect_server"
                       in _cmdline(c)), None)
        time.sleep(0.05)
    if server is None:
        night.wait(timeout=300)
        pytest.fail("no temporary Prefect server was seen while the night ran")
    night.send_signal(signal.SIGKILL)
    night.wait(timeout=30)

    deadline = time.monotonic() + 30
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    still = _alive(server)
    if still:
        os.kill(server, signal.SIGKILL)
    assert not still, "the temporary Prefect server outlived the killed night"
