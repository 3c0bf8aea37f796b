"""ENGRAM_SHARDS=2 through every entry point: the public API, the CLI and MCP route a tenant to its shard."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from engram import add_episodes
from engram.cli.app import app
from engram.mcp.server import EngramMCP
from engram.query import search_memory
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.sharding import for_tenant, shard_of
from tests.llm_seed import add_facts, contradiction

runner = CliRunner()
NAMES = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar")


@pytest.fixture
def sharded(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The shared settings with ENGRAM_SHARDS=2 (the CLI reads it from the environment)."""
    monkeypatch.setenv("ENGRAM_SHARDS", "2")
    return load_settings()


def two_tenants() -> tuple[str, str]:
    """Two tenants that land in different shards of 2."""
    first = NAMES[0]
    return first, next(n for n in NAMES if shard_of(n, 2) != shard_of(first, 2))


def stored(s: Settings, user: str, sql: str) -> list[tuple]:
    """Rows of sql ($u = user) read from the tenant's shard file."""
    with db.connect(for_tenant(s, user).db_path, read_only=True) as con:
        return con.execute(sql, {"u": user} if "$u" in sql else None).fetchall()


def cli(*args: str) -> Any:
    """Run an engram command with --json; its parsed output (the command must succeed)."""
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_readme_python_example_on_two_shards(sharded: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "I moved to Lisbon in October.",
                   "created_at": "2026-11-20T10:00:00Z"}], sharded)
    hits = search_memory("Lisbon", user_id="alice", settings=sharded)
    assert [h.text for h in hits] == ["I moved to Lisbon in October."]
    assert stored(sharded, "alice", "select content from episodes where user_id = $u") == [
        ("I moved to Lisbon in October.",)]
    assert ".shard-" in str(for_tenant(sharded, "alice").db_path)


def test_spellings_of_one_tenant_route_to_one_shard_and_rows(sharded: Settings) -> None:
    spellings = ("alice", "alice ", "ａｌｉｃｅ", "\u3000alice")
    assert len({for_tenant(sharded, u).db_path for u in spellings}) == 1
    # four different statements: near-copies would be one result (search keeps results diverse)
    notes = ("The harbour freezes in January.", "We sailed out of the harbour at dawn with Tom.",
             "A new fish market opened by the harbour.", "My aunt paints boats in the old harbour.")
    for i, u in enumerate(spellings):
        res = add_episodes([{"user_id": u, "content": notes[i],
                             "created_at": f"2026-11-2{i}T10:00:00Z"}], sharded)
        assert res.inserted == 1
    assert stored(sharded, "alice", "select distinct user_id from episodes") == [("alice",)]
    found = {tuple(sorted(h.id for h in search_memory("harbour", user_id=u, settings=sharded, limit=10)))
             for u in spellings}
    assert len(found) == 1 and len(next(iter(found))) == 4
    assert {cli("shard-of", "--user", u)["path"] for u in spellings} == {str(for_tenant(sharded, "alice").db_path)}
    per_spelling = [sorted((r["table"], r["status"], r["n"]) for r in cli("stats", "--user", u)) for u in spellings]
    assert per_spelling[0] == [("episodes", "pending_embed", 4)] and all(p == per_spelling[0] for p in per_spelling)


def test_for_tenant_is_idempotent_and_refuses_control_characters(sharded: Settings) -> None:
    from engram.errors import InvalidInput

    once = for_tenant(sharded, "alice")
    assert for_tenant(once, "alice") == once
    other = next(n for n in NAMES if shard_of(n, 2) != shard_of("alice", 2))
    assert for_tenant(once, other) == for_tenant(sharded, other)  # re-routing a routed one finds the other shard
    with pytest.raises(InvalidInput, match="user_id"):
        for_tenant(sharded, "alice\x00")
    one = sharded.model_copy(update={"shards": 1})
    assert for_tenant(one, " alice") is one


@pytest.mark.slow
def test_cli_per_tenant_on_two_shards(sharded: Settings, tmp_path) -> None:
    a, b = two_tenants()
    src = tmp_path / "eps.jsonl"
    src.write_text("\n".join(json.dumps({"user_id": u, "content": f"{u} keeps bees on the {place} roof",
                                         "created_at": f"2026-10-0{i + 1}T08:00:00Z"})
                             for i, (u, place) in enumerate([(a, "north"), (b, "south")])))
    assert cli("ingest", str(src))["inserted"] == 2
    for u, other in ((a, b), (b, a)):
        assert stored(sharded, u, "select user_id from episodes") == [(u,)]  # the other tenant is not here
        hits = cli("search", "bees roof", "--user", u)["results"]
        assert [h["text"] for h in hits] == [f"{u} keeps bees on the {'north' if u == a else 'south'} roof"]
        assert {r["user_id"] for r in cli("stats", "--user", u)} == {u}
        with db.open_store(for_tenant(sharded, u)) as con:
            add_facts(con, u, [{"id": f"{u}-f1", "text": f"{u} keeps bees"},
                               {"id": f"{u}-f2", "text": f"{u} keeps no bees"}])
            review_id = contradiction(con, u, f"{u}-f1", f"{u}-f2")
        assert [r["id"] for r in cli("review", "list", "--user", u)] == [review_id]
        assert {c["id"] for c in cli("claim", "list", "--user", u)} == {f"{u}-f1", f"{u}-f2"}
        marked = cli("mark-removal", f"{u}-f2", "--user", u)
        assert marked["marked"] == 1
        due = cli("removal-candidates", "--user", u, "--older-than-days", "0", "--as-of", "2099-01-01")
        assert [(g["user_id"], g["table"], g["n"]) for g in due["groups"]] == [(u, "facts", 1)]
        assert stored(sharded, u, "select status from facts where id = $u || '-f2'") == [("removal",)]
    assert {r["user_id"] for r in cli("stats")} == {a, b}  # without --user: every shard
    assert len(cli("review", "list")) == 2
    due = cli("removal-candidates", "--older-than-days", "0", "--as-of", "2099-01-01")
    assert sorted(g["user_id"] for g in due["groups"]) == sorted([a, b])


def test_mcp_tools_on_two_shards(sharded: Settings) -> None:
    a, b = two_tenants()
    ids = {}
    for u in (a, b):
        server = EngramMCP(sharded, u)
        out = server.call("add_memory", {"content": f"{u} plays the cello on Sundays"}).structured_content
        assert out["inserted"] == 1
        ids[u] = out["ids"][0]
    for u in (a, b):
        server = EngramMCP(sharded, f" {u} ")  # another spelling of the same tenant
        found = server.call("search_memory", {"query": "cello Sundays", "search_type": "episodes"})
        assert [r["id"] for r in found.structured_content["results"]] == [ids[u]]
        assert stored(sharded, u, "select id from episodes") == [(ids[u],)]
