"""`engram mcp --http`: one client's flood of searches does not hold up another client's call (issue 57)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from anyio.from_thread import start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from engram import embed
from engram.embed.queue import drain
from engram.store.ingest import add_episodes
from tests.e2e.test_mcp_http_auth import USER, _settings, http_server, mcp_session, token_of

FLOOD = 120
WORDS = "tea coffee lisbon porto violin cat garden morning meeting travel book river swim train".split()


def _seed(store: Path) -> None:
    settings = _settings(store)
    records = [{"content": " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(14)) + f" note {i}"}
               for i in range(3000)]
    add_episodes(records, settings, user_id=USER)
    drain(settings, embed.from_settings(settings), "episodes", USER)


async def _flood(url: str, token: str, done: list[float], started: anyio.Event) -> None:
    """One client (one MCP session) sending FLOOD searches at once; `done` gets each answer's time."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def one(i: int) -> None:
                    res = await session.call_tool("search_memory", {"query": f"{WORDS[i % len(WORDS)]} note {i}"})
                    assert not res.is_error, res.structured_content
                    done.append(time.monotonic())
                    started.set()

                async with anyio.create_task_group() as tg:
                    for i in range(FLOOD):
                        tg.start_soon(one, i)


def test_memory_stats_of_another_client_answers_during_a_flood_of_searches(tmp_path: Path) -> None:
    _seed(tmp_path)
    with http_server(tmp_path) as server, mcp_session(server.url, token_of(tmp_path)) as other:
        other.ok("search_memory", {"query": "warm the index"})
        singles = []
        for _ in range(3):
            t = time.monotonic()
            other.ok("search_memory", {"query": "violin porto"})
            singles.append(time.monotonic() - t)
        one_search = min(singles)

        done: list[float] = []
        with start_blocking_portal() as portal:
            started = portal.call(anyio.Event)
            flood_start = time.monotonic()
            flood = portal.start_task_soon(_flood, server.url, token_of(tmp_path), done, started)
            portal.call(started.wait)  # the flood is being served
            asked, answered_before = time.monotonic(), len(done)
            stats = other.ok("memory_stats")
            answered = time.monotonic()
            answered_meanwhile = sum(1 for t in done if asked <= t <= answered)
            flood.result(timeout=600)
        flood_s = time.monotonic() - flood_start

    assert stats["user_id"] == USER and stats["totals"]["episodes"] == 3000
    assert len(done) == FLOOD
    # one call at a time would make memory_stats wait for the searches queued before it (most of the flood)
    assert answered_meanwhile < FLOOD // 3, (answered_meanwhile, answered_before, answered - asked, flood_s)
    assert answered - asked < max(flood_s / 3, 20 * one_search), (answered - asked, flood_s, one_search)


def test_reads_run_together_and_writes_alone_in_process(tmp_path: Path, monkeypatch) -> None:
    """Searches and stats overlap; add_memory never overlaps anything (DuckDB refuses a read-write connection
    beside a read-only one in one process); every call succeeds and every write is stored."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from engram.mcp import tools as mcp_tools
    from engram.mcp.server import EngramMCP
    from engram.store import db

    seed = [{"content": f"I drink tea number {i}"} for i in range(50)]
    add_episodes(seed, _settings(tmp_path), user_id=USER)
    app = EngramMCP(_settings(tmp_path), USER)
    lock, running, most = threading.Lock(), {"read": 0, "write": 0}, {"read": 0, "mixed": 0}

    def tracked(handler, kind):
        def run(ctx, args):
            with lock:
                running[kind] += 1
                most["read"] = max(most["read"], running["read"])
                if running["write"] and (running["read"] or running["write"] > 1):
                    most["mixed"] += 1
            try:
                time.sleep(0.05)
                return handler(ctx, args)
            finally:
                with lock:
                    running[kind] -= 1
        return run

    for name, kind in (("search_memory", "read"), ("memory_stats", "read"), ("add_memory", "write")):
        monkeypatch.setattr(mcp_tools.BY_NAME[name], "handler", tracked(mcp_tools.BY_NAME[name].handler, kind))
    calls = [("add_memory", {"content": f"new fact {i}"}) if i % 4 == 0 else
             ("memory_stats", {}) if i % 4 == 1 else ("search_memory", {"query": f"tea {i}"}) for i in range(32)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda c: app.call(*c), calls))
    assert [r.structured_content for r in results if r.is_error] == []
    assert most["read"] >= 2 and most["mixed"] == 0
    with db.open_store(_settings(tmp_path), read_only=True) as con:
        stored = con.execute("select count(*) from episodes where content like 'new fact %'").fetchall()
    assert stored == [(8,)]
