"""`engram mcp --http` only answers the holder of its token, refuses foreign web pages and slow clients (issue 57)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes

ENGRAM = Path(sys.executable).with_name("engram")
USER = "alice"
SECRET = "My private diary: the safe code is 4417."
ALLOWED = "http://localhost:3000"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _env(store: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update({"ENGRAM_DB_PATH": str(store / "engram.duckdb"), "ENGRAM_ARCHIVE_DIR": str(store / "archive"),
                "ENGRAM_EMBEDDER": "hash", "ENGRAM_LLM": "none"})
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class HttpServer:
    """A running `engram mcp --http` subprocess; its stderr goes to a file."""

    proc: subprocess.Popen
    port: int
    stderr: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def errors(self) -> str:
        return self.stderr.read_text(errors="replace")


@contextmanager
def http_server(store: Path, **env: str) -> Iterator[HttpServer]:
    """Start the server on a free port and wait until it accepts connections."""
    port = free_port()
    errlog = store / f"stderr-{port}.txt"
    with errlog.open("w") as err:
        proc = subprocess.Popen([str(ENGRAM), "mcp", "--user", USER, "--http", str(port)], env=_env(store, **env),
                                cwd=str(store), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    server = HttpServer(proc, port, errlog)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, server.errors()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Session:
    """A blocking MCP client session over streamable HTTP."""

    def __init__(self, portal: Any, session: ClientSession) -> None:
        self.portal, self.session = portal, session

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        res = self.portal.call(self.session.call_tool, name, arguments)
        assert not res.is_error, res.structured_content
        return res.structured_content


@contextmanager
def mcp_session(url: str, token: str, **headers: str) -> Iterator[Session]:
    """An initialised SDK client session sending `Authorization: Bearer <token>` (as a host does)."""
    with start_blocking_portal() as portal:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}", **headers})
        with portal.wrap_async_context_manager(client):
            with portal.wrap_async_context_manager(streamable_http_client(url, http_client=client)) as (read, write):
                with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                    portal.call(session.initialize)
                    yield Session(portal, session)


def token_of(store: Path) -> str:
    return (store / "engram.duckdb.mcp-token").read_text().strip()


def _settings(store: Path) -> Settings:
    return Settings(db_path=store / "engram.duckdb", archive_dir=store / "archive", embedder="hash", llm="none")


def _episodes(store: Path) -> list[tuple[str, str]]:
    with db.open_store(_settings(store), read_only=True) as con:
        return sorted(con.execute("select user_id, content from episodes").fetchall())


def _post(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(url, json=body, headers={**ACCEPT, **headers}, timeout=30)


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one private episode of alice's."""
    store = tmp_path_factory.mktemp("mcp_http")
    add_episodes([{"content": SECRET, "visibility": "private"}], _settings(store), user_id=USER)
    return store


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[HttpServer]:
    with http_server(store, ENGRAM_MCP_ALLOWED_ORIGINS=f"{ALLOWED}/", ENGRAM_MCP_REQUEST_TIMEOUT_S="1") as s:
        yield s


def test_the_attackers_requests_without_the_token_get_401_and_change_nothing(server: HttpServer, store: Path) -> None:
    before = _episodes(store)
    attempts = [INIT, _call("search_memory", {"query": "safe code", "include_private": True}),
                _call("add_memory", {"content": "planted by another local user"}),
                _call("maintenance_ops", {"op": "finalize_removal", "dry_run": False})]
    for body in attempts:
        for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": token_of(store)},
                        {"Authorization": f"Basic {token_of(store)}"}):
            res = _post(server.url, body, **headers)
            assert res.status_code == 401, (headers, res.text)
            assert res.headers["www-authenticate"].startswith("Bearer")
            assert res.json()["error"]["code"] == "unauthorized"
            assert "4417" not in res.text and "diary" not in res.text
    assert _episodes(store) == before  # nothing planted, nothing removed


def test_the_right_token_reaches_the_tools(server: HttpServer, store: Path) -> None:
    with mcp_session(server.url, token_of(store)) as c:
        found = c.ok("search_memory", {"query": "safe code diary", "include_private": True})
        assert any(r["text"] == SECRET for r in found["results"])
        added = c.ok("add_memory", {"content": "I water the plants on Sundays."})
        assert added["inserted"] == 1
    assert (USER, "I water the plants on Sundays.") in _episodes(store)


def test_a_page_from_another_origin_is_refused_and_an_allowed_one_served(server: HttpServer, store: Path) -> None:
    auth = {"Authorization": f"Bearer {token_of(store)}"}
    for origin in ("http://localhost:9999", "http://127.0.0.1:3000", "https://localhost:3000", "null"):
        res = _post(server.url, INIT, Origin=origin, **auth)
        assert res.status_code == 403, (origin, res.text)
        assert res.json()["error"]["code"] == "forbidden_origin"
    res = _post(server.url, INIT, Origin="http://localhost:9999")  # no token either: still refused
    assert res.status_code in (401, 403)
    for origin in (ALLOWED, "HTTP://LocalHost:3000/"):  # case and a trailing slash do not matter
        res = _post(server.url, INIT, Origin=origin, **auth)
        assert res.status_code == 200, (origin, res.text)
    with mcp_session(server.url, token_of(store), Origin=ALLOWED) as c:
        assert c.ok("memory_stats")["user_id"] == USER


def test_the_token_file_is_private_and_reused_and_its_path_printed(server: HttpServer, store: Path) -> None:
    path = store / "engram.duckdb.mcp-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = token_of(store)
    assert len(token) >= 32
    assert str(path) in server.errors() and token not in server.errors()
    with http_server(store) as again:  # a second start reads the same file
        assert token_of(store) == token
        assert _post(again.url, INIT, Authorization=f"Bearer {token}").status_code == 200
        assert token not in again.errors()


def test_engram_mcp_token_is_used_instead_of_a_file(tmp_path: Path) -> None:
    with http_server(tmp_path, ENGRAM_MCP_TOKEN="s3cret-token-from-the-host") as s:
        assert _post(s.url, INIT, Authorization="Bearer s3cret-token-from-the-host").status_code == 200
        assert _post(s.url, INIT).status_code == 401
        assert "ENGRAM_MCP_TOKEN" in s.errors() and "s3cret" not in s.errors()
    assert not (tmp_path / "engram.duckdb.mcp-token").exists()


def test_a_token_file_others_can_read_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "engram.duckdb.mcp-token"
    path.write_text("shared-token\n")
    path.chmod(0o640)
    try:
        proc = subprocess.run([str(ENGRAM), "mcp", "--user", USER, "--http", str(free_port())], env=_env(tmp_path),
                              cwd=str(tmp_path), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("the server started with a group-readable token file")
    assert proc.returncode != 0
    assert str(path) in proc.stderr and "readable by group or others" in proc.stderr
    assert "Traceback" not in proc.stderr and "shared-token" not in proc.stderr
    assert path.read_text() == "shared-token\n"  # left as it was


def _closed_after(sock: socket.socket, limit_s: float = 15) -> tuple[float, bytes]:
    """Seconds until the server closes the connection, and what it sent before."""
    sock.settimeout(limit_s)
    started, got = time.monotonic(), b""
    try:
        while chunk := sock.recv(4096):
            got += chunk
    except TimeoutError:
        pytest.fail(f"connection still open after {limit_s} s")
    return time.monotonic() - started, got


def test_slow_headers_and_slow_bodies_are_closed_after_the_timeout(server: HttpServer, store: Path) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:  # connects, never sends a request
        waited, _ = _closed_after(sock)
    assert 0.5 <= waited < 10
    with socket.create_connection(("127.0.0.1", server.port)) as sock:  # half a header line
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0")
        waited, _ = _closed_after(sock)
    assert 0.5 <= waited < 10
    body = json.dumps(INIT).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:  # headers, then a tenth of the body
        sock.sendall(_head(server.port, token_of(store), len(body)) + body[:10])
        waited, got = _closed_after(sock)
    assert 0.5 <= waited < 10 and got.startswith(b"HTTP/1.1 408")


def _head(port: int, token: str, length: int) -> bytes:
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def test_clients_that_hang_up_leave_no_traceback(server: HttpServer, store: Path) -> None:
    body = json.dumps(INIT).encode()
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port)) as sock:  # hangs up mid-body
            sock.sendall(_head(server.port, token_of(store), len(body)) + body[:10])
            time.sleep(0.2)
    session = _post(server.url, INIT, Authorization=f"Bearer {token_of(store)}").headers["mcp-session-id"]
    call = json.dumps(_call("search_memory", {"query": "plants"})).encode()
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port)) as sock:  # hangs up before the answer
            head = _head(server.port, token_of(store), len(call)).replace(
                b"\r\n\r\n", f"\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n".encode())
            sock.sendall(head + call)
    time.sleep(1.5)
    assert server.proc.poll() is None
    assert "Traceback" not in server.errors() and "ClientDisconnect" not in server.errors()
    assert _post(server.url, INIT, Authorization=f"Bearer {token_of(store)}").status_code == 200  # still serving
