"""An MCP add_memory embeds its own rows, never the tenant's backlog (issue: one add_memory with 3,000
episodes pending took 5.6 s and reported "embedded": 100002 with 100k)."""

from __future__ import annotations

import json

from engram.mcp.server import EngramMCP
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes

BACKLOG = 300


def _pending(settings: Settings) -> int:
    with db.open_store(settings, read_only=True) as con:
        return con.execute("select count(*) from episodes where status = 'pending_embed'").fetchone()[0]


def _add(settings: Settings, arguments: dict) -> dict:
    result = EngramMCP(settings, "alice").call("add_memory", arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_an_add_memory_embeds_only_its_own_episode(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": f"backlog note {i}"} for i in range(BACKLOG)], settings)
    assert _pending(settings) == BACKLOG

    out = _add(settings, {"content": "I moved to Lisbon in March."})

    assert (out["inserted"], out["embedded"]) == (1, 1)
    assert _pending(settings) == BACKLOG  # the backlog is the embedding worker's
    with db.open_store(settings, read_only=True) as con:
        status, dim = con.execute("select status, embedding_dim from episodes where content = $c",
                                  {"c": "I moved to Lisbon in March."}).fetchone()
    assert (status, dim) == ("active", settings.embed_dim)


def test_a_write_larger_than_embed_on_write_is_left_to_the_worker(settings: Settings) -> None:
    many = [{"content": f"a long list item {i}"} for i in range(settings.embed_on_write + 1)]
    out = _add(settings, {"episodes": many})
    assert (out["inserted"], out["embedded"]) == (len(many), 0)
    assert _pending(settings) == len(many)


def test_a_repeated_write_reports_nothing_embedded(settings: Settings) -> None:
    first = _add(settings, {"content": "Same words", "created_at": "2026-01-01T10:00:00Z"})
    again = _add(settings, {"content": "Same words", "created_at": "2026-01-01T10:00:00Z"})
    assert (first["embedded"], again["duplicates"], again["embedded"]) == (1, 1, 0)
