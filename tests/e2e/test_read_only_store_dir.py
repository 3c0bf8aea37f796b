"""A store in a read-only directory (a read-only mount): reads work, the log file falls back (issue 44, item 3)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.cli.app import app

ENGRAM = Path(sys.executable).with_name("engram")
EPISODES = [{"user_id": "alice", "content": text, "created_at": f"2024-01-0{k + 1}T10:00:00Z"}
            for k, text in enumerate(["I drink green tea every morning", "My sister lives in Lisbon"])]
WARNING = "cannot write the log file"


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(ENGRAM_DB_PATH=str(folder / "engram.duckdb"), ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none",
               ENGRAM_ENABLE_INNER_VOICE="true", ENGRAM_ARCHIVE_DIR=str(folder / "archive"))
    return env


def _mount(target: Path, *opts: str) -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("mount") is None:
        return "needs Linux and root to mount a read-only tmpfs"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=64m", *opts)), "tmpfs", str(target)],
                          capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else f"mount failed: {done.stderr.strip()}"


@pytest.fixture
def read_only_store(settings, tmp_path: Path) -> Iterator[Path]:
    """The store (with two episodes) alone in a tmpfs remounted read-only."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(e) + "\n" for e in EPISODES))
    assert CliRunner().invoke(app, ["ingest", str(rows)]).exit_code == 0
    folder = tmp_path / "ro"
    folder.mkdir()
    reason = _mount(folder)
    if reason:
        pytest.skip(reason)
    try:
        shutil.copy(settings.db_path, folder / "engram.duckdb")
        done = subprocess.run(["mount", "-o", "remount,ro", str(folder)], capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"remount read-only failed: {done.stderr.strip()}")
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("args", [
    ["search", "tea", "--user", "alice"],
    ["context", "--user", "alice", "-m", "what do I drink?"],
    ["retrieve", "tea", "--user", "alice"],
    ["archive-exports"],
    ["stats"],
])
def test_read_commands_work_in_a_read_only_store_directory(read_only_store: Path, args: list[str]) -> None:
    proc = subprocess.run([str(ENGRAM), "-v", *args], cwd=read_only_store, env=_env(read_only_store),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "error [" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count(WARNING) <= 1  # -v logs INFO: the fallback is said once, then the terminal only
    assert not (read_only_store / "engram.log").exists()


def test_mcp_answers_in_a_read_only_store_directory(read_only_store: Path) -> None:
    proc = subprocess.Popen([str(ENGRAM), "mcp", "--user", "alice"], cwd=read_only_store, env=_env(read_only_store),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    calls = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "search_memory", "arguments": {"query": "tea"}}}]
    try:
        for call in calls:
            proc.stdin.write((json.dumps(call) + "\n").encode())
        proc.stdin.flush()
        replies = read_replies(proc, 2, timeout_s=120)
    finally:
        proc.kill()
        proc.wait()
    assert [r["id"] for r in replies] == [0, 1]
    result = replies[1]["result"]
    assert not result.get("isError"), result
    assert "green tea" in json.dumps(result)


def read_replies(proc: subprocess.Popen, n: int, timeout_s: float) -> list[dict]:
    """The first n JSON-RPC lines the server writes (fewer when it exits or the time runs out)."""
    out: list[dict] = []
    buf = b""
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 20)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and len(out) < n:
            line, buf = buf.split(b"\n", 1)
            out.append(json.loads(line))
    return out


def test_an_unwritable_log_file_is_one_warning_then_the_terminal_only(tmp_path: Path, capsys) -> None:
    import logging

    from engram.cli import logs

    (tmp_path / "engram.log").mkdir()  # cannot be opened as a file (as on a read-only mount, even as root)
    logs.configure(verbose=False, log_file=tmp_path / "engram.log")
    try:
        for n in range(3):
            logging.getLogger("engram.test").warning("warning %d", n)
    finally:
        logs.reset()
    err = capsys.readouterr().err
    assert err.count(WARNING) == 1 and all(f"warning {n}" in err for n in range(3))
