"""`engram mcp` driven through the mcp SDK's own stdio client, as a real subprocess (one per module)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from engram.query.wordpiece import count_tokens
from engram.settings import Settings
from engram.store import db

USER = "alice"
OTHER = "bob"
ENGRAM = Path(sys.executable).with_name("engram")


class Client:
    """A blocking facade over an MCP ClientSession living in a portal's event loop."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal, self.session = portal, session

    def list_tools(self) -> Any:
        return self.portal.call(self.session.list_tools)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return self.portal.call(self.session.call_tool, name, arguments)

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        res = self.call(name, arguments)
        assert not res.is_error, res.structured_content
        assert json.loads(res.content[0].text) == res.structured_content
        return res.structured_content

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        res = self.call(name, arguments)
        assert res.is_error, res.structured_content
        err = res.structured_content["error"]
        assert "Traceback" not in err["message"]
        return err


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {"ENGRAM_DB_PATH": str(tmp / "engram.duckdb"), "ENGRAM_ARCHIVE_DIR": str(tmp / "archive"),
           "ENGRAM_EMBEDDER": "hash", "ENGRAM_LLM": "none", "PATH": str(ENGRAM.parent)}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp")


@pytest.fixture(scope="module")
def client(store: Path) -> Iterator[Client]:
    """One `engram mcp --user alice` subprocess for the whole module."""
    params = StdioServerParameters(command=str(ENGRAM), args=["mcp", "--user", USER], env=_env(store),
                                   cwd=str(store))
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(stdio_client(params)) as (read, write):
            with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                portal.call(session.initialize)
                yield Client(portal, session)


def _settings(store: Path) -> Settings:
    return Settings(db_path=store / "engram.duckdb", archive_dir=store / "archive", embedder="hash", llm="none")


def test_lists_every_tool_with_bounded_schemas(client: Client) -> None:
    tools = {t.name: t for t in client.list_tools().tools}
    assert set(tools) == {"add_memory", "search_memory", "inner_voice", "inner_voice_retrieve", "ask",
                          "maintenance_ops", "knowledgegraph_moderate", "why", "memory_stats", "detailed_help"}
    search = tools["search_memory"].input_schema
    assert search["properties"]["max_tokens"] == {"type": "integer", "default": 1500}  # = ENGRAM_MAX_TOKENS
    assert search["properties"]["limit"] == {"type": "integer"}  # bounds in detailed_help, enforced on call
    assert "method" not in search["properties"] and search["required"] == ["query"]
    listed = [t.model_dump(by_alias=True, exclude_none=True) for t in tools.values()]
    assert count_tokens(json.dumps(listed, ensure_ascii=False)) <= 2000  # in every conversation's context
    for t in tools.values():
        assert "user_id" not in t.input_schema["properties"]  # the tenant is fixed by the server


def test_add_then_search_and_stats_match_stored_rows(client: Client, store: Path) -> None:
    added = client.ok("add_memory", {"content": "I moved to Lisbon in March and learn Portuguese.",
                                     "role": "user", "session_id": "s1"})
    assert (added["received"], added["inserted"], added["embedded"]) == (1, 1, 1)
    batch = client.ok("add_memory", {"episodes": [{"content": "My cat is called Miso."},
                                                  {"content": "I prefer green tea to coffee.", "tags": ["food"]}]})
    assert batch["inserted"] == 2

    with db.open_store(_settings(store), read_only=True) as con:
        rows = con.execute("select id, user_id, content, status, session_id from episodes order by id").fetchall()
    assert sorted(r[0] for r in rows) == sorted(added["ids"] + batch["ids"])
    assert {r[1] for r in rows} == {USER} and {r[3] for r in rows} == {"active"}
    assert [r[4] for r in rows if r[0] == added["ids"][0]] == ["s1"]

    found = client.ok("search_memory", {"query": "Lisbon Portuguese", "search_type": "episodes", "limit": 2})
    assert found["count"] == len(found["results"]) >= 1
    assert found["results"][0]["id"] == added["ids"][0]
    assert found["results"][0]["text"] == "I moved to Lisbon in March and learn Portuguese."

    stats = client.ok("memory_stats")
    assert stats["user_id"] == USER
    assert stats["totals"]["episodes"] == len(rows) == 3
    assert {"table": "episodes", "status": "active", "n": 3} in stats["counts"]


def test_user_id_in_a_record_is_refused_and_other_tenants_stay_invisible(client: Client, store: Path) -> None:
    err = client.error("add_memory", {"episodes": [{"content": "x", "user_id": OTHER}]})
    assert err == {"code": "invalid_params", "message": "episodes.0.user_id: unknown field (no tool takes a user_id)"}
    from engram.store.ingest import add_episodes

    add_episodes([{"content": "Bob's secret: Lisbon vault code 1234"}], _settings(store), user_id=OTHER)
    found = client.ok("search_memory", {"query": "Lisbon vault code", "limit": 10})
    assert found["results"] and all("vault" not in r["text"] for r in found["results"])
    assert client.ok("memory_stats")["totals"]["episodes"] == 3


def test_a_search_reply_is_never_over_its_budget_and_shows_a_long_turn_as_its_passage(client: Client) -> None:
    filler = " ".join(f"Sentence {i} is about the weather and nothing else." for i in range(400))
    client.ok("add_memory", {"content": filler + " My violin teacher Ines lives in Porto. " + filler,
                             "role": "assistant", "session_id": "s9"})
    for budget in (20, 60, 120, 400, 1500, 8000):
        res = client.call("search_memory", {"query": "violin teacher Ines Porto", "max_tokens": budget})
        text = res.content[0].text
        reply = json.loads(text)
        assert count_tokens(text) <= budget and reply["count"] == len(reply["results"])
        if budget >= 60:  # below that not even the reason fits: the bare reply {"count": 0, "results": []}
            assert count_tokens(text) == reply["tokens"] and reply["max_tokens"] == budget
            assert reply["results"] or reply["reason"]
    long_turn = next(r for r in reply["results"] if r.get("role") == "assistant")
    assert "Ines lives in Porto" in long_turn["text"] and long_turn["text"].startswith("…")
    assert count_tokens(long_turn["text"]) <= 8000 // 4
    for bad in (0, -5, 1_000_001, "400", True, 2.5):
        err = client.error("search_memory", {"query": "violin", "max_tokens": bad})
        assert err["code"] == "invalid_params" and err["message"].startswith("max_tokens:")


def test_out_of_range_and_malformed_arguments_are_invalid_params(client: Client) -> None:
    err = client.error("search_memory", {"query": "tea", "limit": 101})
    assert err["code"] == "invalid_params" and err["message"].startswith("limit:")
    assert client.error("search_memory", {"query": "tea", "limit": 0})["code"] == "invalid_params"
    err = client.error("search_memory", {"query": "tea", "search_type": "everything"})
    assert err["code"] == "invalid_params" and err["message"].startswith("search_type:")
    err = client.error("search_memory", {})
    assert err["code"] == "invalid_params" and err["message"].startswith("query:")
    assert client.error("add_memory", {})["code"] == "invalid_params"
    assert client.error("no_such_tool", {})["code"] == "invalid_params"


def test_disabled_gates_return_feature_disabled(client: Client) -> None:
    err = client.error("inner_voice_retrieve", {"query": "tea"})
    assert err["code"] == "feature_disabled" and "ENGRAM_ENABLE_INNER_VOICE" in err["message"]
    assert client.error("inner_voice", {"content": "tea"})["code"] == "feature_disabled"
    assert client.error("ask", {"query": "What do I drink?"})["code"] == "feature_disabled"  # ENGRAM_LLM=none


def test_maintenance_why_moderation_and_help(client: Client) -> None:
    listed = client.ok("maintenance_ops", {"op": "list_removal_candidates"})
    assert listed["groups"] == [] and listed["older_than_days"] == 30  # ENGRAM_RETENTION_DAYS
    exported = client.ok("maintenance_ops", {"op": "export_removals"})  # dry_run defaults to true
    assert exported["files"] == []
    assert client.ok("maintenance_ops", {"op": "finalize_removal"})["rows"] is not None
    restored = client.ok("maintenance_ops", {"op": "restore", "ids": ["ep_nothing"]})
    assert isinstance(restored, dict)
    err = client.error("maintenance_ops", {"op": "list_removal_candidates", "older_than_days": 5000})
    assert err["code"] == "invalid_params" and err["message"].startswith("older_than_days:")

    assert client.ok("knowledgegraph_moderate") == {"pending": {"entities": [], "edges": []}}
    err = client.error("knowledgegraph_moderate", {"approve": ["kgc_missing"]})
    assert err["code"] == "invalid_params"

    err = client.error("why", {"kind": "claim", "id": "clm_missing"})
    assert err["code"] == "invalid_params"
    assert client.error("why", {"kind": "fact", "id": "x"})["code"] == "invalid_params"

    overview = client.ok("detailed_help")
    assert len(overview["tools"]) == 10
    helped = client.ok("detailed_help", {"tool": "search_memory"})
    params = {p["name"]: p for p in helped["parameters"]}
    assert (params["limit"]["minimum"], params["limit"]["maximum"]) == (1, 100)
    assert params["max_tokens"]["default"] == 1500 and params["method"]["default"] == "hybrid"
    assert helped["example"]["name"] == "search_memory" and helped["help"]


@contextmanager
def _server(store: Path, args: list[str], errlog: Any = None, **env: str) -> Iterator[Client]:
    params = StdioServerParameters(command=str(ENGRAM), args=args, cwd=str(store), env=_env(store, **env))
    with start_blocking_portal() as portal:
        cm = stdio_client(params) if errlog is None else stdio_client(params, errlog=errlog)
        with portal.wrap_async_context_manager(cm) as (read, write):
            with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                portal.call(session.initialize)
                yield Client(portal, session)


def test_why_and_moderation_act_on_the_bound_tenant_only(client: Client, store: Path) -> None:
    from engram.thoughtdb.kg_extract import (
        EntityCandidate,
        KGExtraction,
        stage_candidates,
    )
    from tests.thought_seed import claim, edge, episode

    with db.open_store(_settings(store)) as con:
        episode(con, USER, "mcp_e1", "CI ran every test", kind="thought")
        claim(con, USER, "mcp_ship", "We ship on Friday")
        claim(con, USER, "mcp_green", "Tests are green", sources=["mcp_e1"], confidence=0.9)
        edge(con, USER, "depends_on", "mcp_ship", "mcp_green")
        claim(con, OTHER, "mcp_bob", "Bob's claim")
        for user in (USER, OTHER):
            stage_candidates(con, user, "mcp_e1", KGExtraction(entities=[EntityCandidate("Acme", "acme", "org", 0.9)],
                                                                 relations=[]), 50, 50, 0.0)
        mine = con.execute("select id from kg_entity_candidates where user_id = ?", [USER]).fetchall()[0][0]
        bobs = con.execute("select id from kg_entity_candidates where user_id = ?", [OTHER]).fetchall()[0][0]

    trace = client.ok("why", {"kind": "claim", "id": "mcp_ship", "depth": 3})
    assert trace["start_id"] == "mcp_ship" and "mcp_green" in {n["id"] for n in trace["nodes"]}
    err = client.error("why", {"kind": "claim", "id": "mcp_bob"})  # another tenant's claim is unknown here
    assert err["code"] == "invalid_params" and err["message"].startswith("id:")

    pending = client.ok("knowledgegraph_moderate")["pending"]
    assert [e["id"] for e in pending["entities"]] == [mine]
    assert client.error("knowledgegraph_moderate", {"approve": [bobs]})["code"] == "invalid_params"
    done = client.ok("knowledgegraph_moderate", {"approve": [mine]})
    assert done["approved"] == 1
    with db.open_store(_settings(store), read_only=True) as con:
        status = dict(con.execute("select user_id, status from kg_entity_candidates").fetchall())
        entities = con.execute("select user_id, norm_name from kg_entities").fetchall()
    assert status == {USER: "approved", OTHER: "pending"} and entities == [(USER, "acme")]


def test_maintenance_ops_archive_cycle_stays_in_the_tenant(client: Client, store: Path) -> None:
    from tests.thought_seed import claim

    with db.open_store(_settings(store)) as con:
        claim(con, USER, "mcp_old", "An old retired fact", status="deprecated")
        claim(con, OTHER, "mcp_old_bob", "Bob's old retired fact", status="deprecated")

    def live() -> set[tuple[str, str]]:
        with db.open_store(_settings(store), read_only=True) as con:
            return set(con.execute("select user_id, id from facts where id like 'mcp_old%'").fetchall())

    listed = client.ok("maintenance_ops", {"op": "list_removal_candidates"})
    assert [(g["table"], g["user_id"], g["status"], g["n"]) for g in listed["groups"]] == \
        [("facts", USER, "deprecated", 1)]
    assert client.ok("maintenance_ops", {"op": "export_removals"})["files"] == []  # dry run by default
    exported = client.ok("maintenance_ops", {"op": "export_removals", "dry_run": False})
    assert exported["rows"]["facts"] == 1 and len(exported["files"]) >= 1
    finalized = client.ok("maintenance_ops", {"op": "finalize_removal", "dry_run": False})
    assert finalized["rows"]["facts"] == 1
    assert live() == {(OTHER, "mcp_old_bob")}
    restored = client.ok("maintenance_ops", {"op": "restore", "ids": ["mcp_old", "mcp_old_bob"], "dry_run": False})
    assert restored["rows"]["facts"] == 1
    assert live() == {(USER, "mcp_old"), (OTHER, "mcp_old_bob")}


def test_inner_voice_retrieve_and_ask_with_the_gates_on(store: Path) -> None:
    """A second server (ENGRAM_MCP_USER_ID, inner voice on, fake LLM) runs the gated tools."""
    with _server(store, ["mcp"], ENGRAM_ENABLE_INNER_VOICE="true", ENGRAM_MCP_USER_ID=USER,
                 ENGRAM_LLM="fake") as c:
        out = c.ok("inner_voice_retrieve", {"query": "green tea", "top_k": 3})
        assert set(out) >= {"snippets", "diagnostics"} and out["diagnostics"]["k_req"] == 3
        assert out["snippets"] and all("vault" not in s["text"] for s in out["snippets"])
        assert c.error("inner_voice_retrieve", {"query": "tea", "top_k": 51})["code"] == "invalid_params"

        c.ok("add_memory", {"content": "I think green tea helps me focus.", "kind": "thought"})
        voice = c.ok("inner_voice", {"content": "green tea focus", "sim_thresh": 0.0})
        assert voice["sources"] and voice["saved_thought_id"]
        with db.open_store(_settings(store), read_only=True) as con:
            saved = con.execute("select user_id, kind, is_summary from episodes where id = ?",
                                [voice["saved_thought_id"]]).fetchall()
        assert saved == [(USER, "thought", True)]

        answer = c.ok("ask", {"query": "What do I drink?"})
        assert isinstance(answer["refused"], bool) and answer["session_id"]


def test_no_log_keeps_only_counters(store: Path, tmp_path: Path) -> None:
    log_path = tmp_path / "stderr.txt"
    with log_path.open("w") as errlog:
        with _server(store, ["-v", "mcp", "--user", USER], errlog=errlog, ENGRAM_NO_LOG="true") as c:
            c.ok("search_memory", {"query": "secret words", "limit": 1})
            c.error("search_memory", {"query": "secret words", "limit": 0})
    text = log_path.read_text()
    assert "tool=search_memory" not in text and "secret" not in text
    assert "2 call(s), 1 error(s)" in text
    with log_path.open("w") as errlog:
        with _server(store, ["-v", "mcp", "--user", USER], errlog=errlog) as c:
            c.ok("search_memory", {"query": "secret words", "limit": 1})
    text = log_path.read_text()
    assert "tool=search_memory status=ok" in text and "secret" not in text


def test_without_a_user_the_server_refuses_to_start(store: Path) -> None:
    import subprocess

    proc = subprocess.run([str(ENGRAM), "mcp"], env=_env(store), cwd=str(store), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "error [invalid_params]: user:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_streamable_http_on_loopback(store: Path) -> None:
    """`engram mcp --http PORT` serves the same tools at http://127.0.0.1:PORT/mcp to the holder of its token
    (the refusals are in test_mcp_http_auth.py)."""
    import socket
    import subprocess
    import time

    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([str(ENGRAM), "mcp", "--user", USER, "--http", str(port)], env=_env(store),
                            cwd=str(store), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        with start_blocking_portal() as portal:
            url = f"http://127.0.0.1:{port}/mcp"
            token = (store / "engram.duckdb.mcp-token").read_text().strip()  # created 0600 at the first start
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            with portal.wrap_async_context_manager(http), \
                    portal.wrap_async_context_manager(streamable_http_client(url, http_client=http)) as (read, write):
                with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                    portal.call(session.initialize)
                    c = Client(portal, session)
                    assert len(c.list_tools().tools) == 10
                    assert c.ok("memory_stats")["user_id"] == USER
                    assert c.error("search_memory", {"query": "tea", "limit": 101})["code"] == "invalid_params"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_unexpected_and_store_errors_map_to_stable_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: a bug becomes internal_error (type only, no trace); an unusable store becomes db_error."""
    from engram.mcp import tools as mcp_tools
    from engram.mcp.server import EngramMCP

    bad_dir = tmp_path / "a_directory"
    bad_dir.mkdir()
    app = EngramMCP(Settings(db_path=bad_dir, embedder="hash", llm="none"), USER)
    res = app.call("memory_stats", {})
    assert res.is_error and res.structured_content["error"]["code"] == "db_error"

    def boom(ctx: Any, args: dict[str, Any]) -> Any:
        raise KeyError("secret memory text")

    monkeypatch.setattr(mcp_tools.BY_NAME["memory_stats"], "handler", boom)
    res = app.call("memory_stats", {})
    assert res.structured_content == {"error": {"code": "internal_error",
                                                "message": "internal error (KeyError); see the server log"}}
    assert app.counters["errors.db_error"] == 1 and app.counters["errors.internal_error"] == 1
    with pytest.raises(Exception, match="user"):
        EngramMCP(Settings(db_path=tmp_path / "x.duckdb"), " ")
