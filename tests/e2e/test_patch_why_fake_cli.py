"""`engram why` with ENGRAM_LLM=fake: the support set is picked on the LLM path, offline."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from engram.cli.app import app
from engram.store import db
from tests.thought_seed import claim, edge, episode

U = "alice"


def test_why_cli_uses_the_fake_llm(settings, monkeypatch) -> None:
    with db.open_store(settings) as con:
        episode(con, U, "ep1", "Tests are green")
        claim(con, U, "start", "We can ship on Friday")
        claim(con, U, "a", "Tests are green", sources=["ep1"], confidence=0.9)
        edge(con, U, "depends_on", "start", "a")
    runner = CliRunner()
    monkeypatch.setenv("ENGRAM_LLM", "fake")
    result = runner.invoke(app, ["why", "claim", "start", "--user", U, "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.output)
    assert r["picked_by"] == "llm:fake-llm" and r["support_set"] == ["a"]
    monkeypatch.setenv("ENGRAM_LLM", "none")
    text = runner.invoke(app, ["why", "claim", "start", "--user", U]).output
    assert "support set (rule): a" in text
