"""Importing engram's flows turns Prefect's telemetry off by default, never against a user's setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.prefect_env import quiet_prefect

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import os, engram.flows.nightly; from prefect.settings import get_current_settings; "
         "print(get_current_settings().server.analytics_enabled, os.environ.get('DO_NOT_TRACK'))")


@pytest.mark.parametrize(("given", "want"), [
    ({}, {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}),
    ({"PREFECT_SERVER_ANALYTICS_ENABLED": "true"}, {"PREFECT_SERVER_ANALYTICS_ENABLED": "true"}),
    ({"DO_NOT_TRACK": "0"}, {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "0"}),
    ({"PREFECT_SERVER_ANALYTICS_ENABLED": "0"}, {"PREFECT_SERVER_ANALYTICS_ENABLED": "0", "DO_NOT_TRACK": "1"}),
])
def test_quiet_prefect_defaults_and_keeps_explicit_settings(given: dict, want: dict) -> None:
    env = dict(given)
    quiet_prefect(env)
    assert env == want


def _probe(**extra: str) -> str:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ENGRAM_", "PREFECT_SERVER_ANALYTICS")) and k != "DO_NOT_TRACK"}
    env.update(PYTHONPATH=str(ROOT), **extra)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_importing_the_nightly_flow_turns_prefect_telemetry_off() -> None:
    assert _probe() == "False 1"  # what the ephemeral server (which inherits os.environ) reads too


def test_an_explicit_user_setting_wins() -> None:
    assert _probe(PREFECT_SERVER_ANALYTICS_ENABLED="true") == "True None"


def _on_a_terminal(code: str, home: Path) -> str:
    """stderr and stdout of `python -c code` run on a pseudo-terminal, as a new Prefect user (fresh home)."""
    import pty

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ENGRAM_", "PREFECT_SERVER_ANALYTICS", "CI", "GITHUB_")) and k != "DO_NOT_TRACK"}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(home))
    out = bytearray()

    def read(fd: int) -> bytes:
        data = os.read(fd, 1024)
        out.extend(data)
        return data

    pid, fd = pty.fork()
    if pid == 0:  # the child: replaced by python on the terminal
        os.execve(sys.executable, [sys.executable, "-c", code], env)
    try:
        while True:
            try:
                if not read(fd):
                    break
            except OSError:
                break
    finally:
        os.waitpid(pid, 0)
    return out.decode(errors="replace")


def test_no_telemetry_notice_on_a_terminal(tmp_path: Path) -> None:
    notice = "anonymous usage data"
    assert notice in _on_a_terminal("import prefect", tmp_path / "plain")  # what Prefect alone prints
    assert notice not in _on_a_terminal("import engram.flows.nightly", tmp_path / "engram")


def test_the_temporary_servers_cancelled_close_is_dropped_and_nothing_else(caplog) -> None:
    """PrefectHQ/prefect#16504: SQLAlchemy's pool logs a CancelledError while the temporary server stops."""
    import asyncio
    import logging

    quiet_prefect({})
    pool = logging.getLogger("sqlalchemy.pool.impl.NullPool")
    caplog.set_level(logging.ERROR, logger=pool.name)
    for exc in (asyncio.CancelledError(), OSError("disk gone")):
        try:
            raise exc
        except BaseException:  # noqa: BLE001 - logged as the pool logs it
            pool.error("Exception closing connection %r", "<AdaptedConnection>", exc_info=True)
    pool.error("Exception during reset or similar")
    kept = [(r.getMessage(), type(r.exc_info[1]).__name__ if r.exc_info else None) for r in caplog.records]
    assert kept == [("Exception closing connection '<AdaptedConnection>'", "OSError"),
                    ("Exception during reset or similar", None)]
    quiet_prefect({})  # idempotent: one filter per logger
    assert len([f for f in pool.filters if type(f).__name__ == "CancelledCloseFilter"]) == 1
