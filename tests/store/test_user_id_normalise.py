"""user_id has one spelling: NFKC, trimmed; control characters are refused, naming user_id."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.errors import InvalidInput
from engram.store.ingest import IngestRejected, add_episodes, validate_record
from engram.store.tenant import normalise_user_id

NOW = datetime(2024, 1, 1)


@pytest.mark.parametrize(("raw", "want"), [
    ("alice", "alice"), ("alice  ", "alice"), (" alice", "alice"), ("ａｌｉｃｅ", "alice"),
    ("Cafe\u0301", "Caf\u00e9"), ("bob smith", "bob smith"),
])
def test_spellings_of_one_tenant_are_one_user_id(raw: str, want: str) -> None:
    assert normalise_user_id(raw) == want
    row = validate_record({"user_id": raw, "content": "x"}, NOW)
    assert row["user_id"] == want


@pytest.mark.parametrize("raw", ["alice\x00", "al\x1bice", "a\rb", "\u3000", "   ", "a\ud800"])
def test_control_characters_and_blank_ids_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput, match="^user_id: "):
        normalise_user_id(raw)


def test_add_episodes_stores_one_tenant_and_rejects_nul(settings) -> None:
    from engram.store import db

    add_episodes([{"user_id": u, "content": "same tenant", "created_at": f"2024-01-0{i}"}
                  for i, u in enumerate(["alice", "alice ", "ａｌｉｃｅ"], start=1)], settings)
    with db.open_store(settings, read_only=True) as con:
        assert con.execute("select distinct user_id from episodes").fetchall() == [("alice",)]
    with pytest.raises(IngestRejected, match="user_id: contains a control character"):
        add_episodes([{"user_id": "alice\x00", "content": "x"}], settings)


def test_query_functions_and_cli_use_the_normalised_tenant(settings, tmp_path) -> None:
    from engram.query.search import search_memory

    add_episodes([{"user_id": "alice", "content": "green tea every morning", "created_at": "2024-01-01"}],
                 settings)
    hits = search_memory("green tea", user_id="ａｌｉｃｅ ", method="lexical", settings=settings)
    assert [h.text for h in hits] == ["green tea every morning"]
    with pytest.raises(InvalidInput, match="user_id"):
        search_memory("green tea", user_id="alice\x00", method="lexical", settings=settings)
    runner = CliRunner()
    res = runner.invoke(app, ["search", "green tea", "--user", "alice ", "--method", "lexical", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["results"][0]["text"] == "green tea every morning"
    res = runner.invoke(app, ["claim", "list", "--user", "al\x1bice"])
    assert res.exit_code == 2 and "user_id: contains a control character" in res.stderr


def test_mcp_server_binds_the_normalised_tenant(settings) -> None:
    from engram.mcp.server import EngramMCP

    assert EngramMCP(settings, " ａｌｉｃｅ").ctx.user_id == "alice"
    with pytest.raises(InvalidInput, match="user"):
        EngramMCP(settings, "alice\x00")
