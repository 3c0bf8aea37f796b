"""`python -m deployments.serve` exits within 10 s of SIGTERM even when its Prefect server has gone."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXIT_WITHIN_S = 10.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"prefect server exited early: {proc.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("prefect server never became healthy")


def _wait_line(proc: subprocess.Popen, needle: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    os.set_blocking(proc.stdout.fileno(), False)
    seen = b""
    while time.monotonic() < deadline:
        chunk = proc.stdout.read() or b""
        seen += chunk
        if needle.encode() in seen:
            return
        if proc.poll() is not None:
            raise AssertionError(f"serve exited early ({proc.returncode}): {seen.decode()[-2000:]}")
        time.sleep(0.2)
    raise AssertionError(f"serve never printed {needle!r}: {seen.decode()[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@contextmanager
def _server_and_serve(tmp_path: Path, python_args: tuple[str, ...] = (), env: dict[str, str] | None = None
                      ) -> Iterator[tuple[subprocess.Popen, subprocess.Popen]]:
    """A Prefect server on a free port and `engram.deployments.serve` against it; both killed after."""
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "ENGRAM_"))}
    prefect_env = {"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                   "PREFECT_UI_ENABLED": "false", "PREFECT_API_URL": api}
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path, env={**base, **prefect_env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    serve = None
    try:
        _wait_healthy(api, server)
        serve = subprocess.Popen(
            [sys.executable, *python_args, "-m", "engram.deployments.serve"], cwd=tmp_path,
            env={**base, **prefect_env, "PYTHONPATH": str(ROOT), "ENGRAM_DB_PATH": str(tmp_path / "e.duckdb"),
                 "ENGRAM_LLM": "none", "ENGRAM_EMBEDDER": "hash", **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
        yield server, serve
    finally:
        if serve is not None:
            _stop(serve)
        _stop(server)


@pytest.mark.slow
def test_serve_exits_on_sigterm_after_the_server_has_gone(tmp_path: Path) -> None:
    with _server_and_serve(tmp_path, env={"PREFECT_LOGGING_LEVEL": "DEBUG"}) as (server, serve):
        _wait_line(serve, "Discovered 0 scheduled flow runs")  # the runner has started and polled once
        os.killpg(server.pid, signal.SIGTERM)  # the server goes away
        server.wait(timeout=30)
        time.sleep(2)
        started = time.monotonic()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=EXIT_WITHIN_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve still running {EXIT_WITHIN_S:.0f} s after SIGTERM with the server gone")
        assert time.monotonic() - started < EXIT_WITHIN_S
        assert serve.returncode in (0, 1)  # a handled shutdown (1: deployments left unpaused), not a kill


@pytest.mark.slow
def test_serve_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    # issue 45 #14: the shutdown printed "RuntimeWarning: coroutine 'Runner.astop' was never awaited"
    with _server_and_serve(tmp_path, python_args=("-W", "default")) as (_server, serve):
        _wait_line(serve, "serving: ")
        time.sleep(5)  # the runner starts its loops
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=EXIT_WITHIN_S)
        out = (serve.stdout.read() or b"").decode()
        assert serve.returncode == 0, out[-3000:]
        assert "never awaited" not in out and "Traceback" not in out, out[-3000:]
