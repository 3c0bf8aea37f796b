"""`engram mcp` over stdio answers every line, even one the SDK cannot read (issue 44, item 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_read_only_store_dir import read_replies

ENGRAM = Path(sys.executable).with_name("engram")
INIT = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def call(k: int, name: str, arguments: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {"name": name, "arguments": arguments}})


def test_unreadable_lines_get_error_replies_and_the_server_goes_on(tmp_path: Path) -> None:
    nested = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_memory","arguments":'
              '{"content":"x","metadata":' + '{"a":' * 200 + "1" + "}" * 200 + "}}}")
    surrogate = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_memory","arguments":{"content":"x \\ud800 y"}}}'
    lines = [*(json.dumps(m) for m in INIT), nested, surrogate, '{"jsonrpc":"2.0","id":3,' + "[" * 100_000,
             call(4, "search_memory", {"query": "x" * 1_000_000}),
             call(5, "search_memory", {"query": "tea", "as_of": "9999-12-31T23:59:59"}),
             call(6, "add_memory", {"content": "I drink green tea"})]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")},
           "ENGRAM_DB_PATH": str(tmp_path / "engram.duckdb"), "ENGRAM_EMBEDDER": "hash", "ENGRAM_LLM": "none"}
    proc = subprocess.Popen([str(ENGRAM), "mcp", "--user", "alice"], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write("".join(line + "\n" for line in lines).encode())
        proc.stdin.flush()
        replies = {r["id"]: r for r in read_replies(proc, 7, timeout_s=120)}
    finally:
        proc.kill()
        proc.wait()
    assert sorted(replies) == [0, 1, 2, 3, 4, 5, 6], replies.keys()  # every request answered, none hangs
    assert replies[1]["error"]["code"] == -32602 and "nested too deeply" in replies[1]["error"]["message"]
    assert replies[2]["error"]["code"] == -32602 and "lone surrogate" in replies[2]["error"]["message"]
    assert replies[3]["error"]["code"] == -32700
    too_long = replies[4]["result"]["structuredContent"]["error"]
    assert too_long["code"] == "invalid_params" and len(too_long["message"]) < 1000  # not the 1 MB value
    assert not replies[5]["result"].get("isError"), replies[5]  # the far as_of is a valid moment
    assert replies[6]["result"]["structuredContent"]["inserted"] == 1  # the server goes on


def test_the_server_exits_cleanly_when_the_client_closes_at_once(tmp_path: Path) -> None:
    """Closing stdin during the start-up warm-up: the server waits for it, so no thread is inside the
    embedder's or DuckDB's native code at interpreter exit (which aborts: "terminate called ...")."""
    from engram.settings import Settings
    from engram.store.ingest import add_episodes

    settings = Settings(db_path=tmp_path / "engram.duckdb", embedder="hash", llm="none")
    add_episodes([{"content": f"I drink green tea at {h} o'clock"} for h in range(200)], settings, user_id="alice")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")},
           "ENGRAM_DB_PATH": str(tmp_path / "engram.duckdb"), "ENGRAM_EMBEDDER": "hash", "ENGRAM_LLM": "none"}
    for _ in range(2):
        proc = subprocess.run([str(ENGRAM), "-v", "mcp", "--user", "alice"], cwd=tmp_path, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "terminate called" not in proc.stderr and "Traceback" not in proc.stderr
        warmed, stopped = proc.stderr.find("search warmed up"), proc.stderr.find("mcp server stopped")
        assert 0 <= warmed < stopped, proc.stderr  # the warm-up ended before the process did
