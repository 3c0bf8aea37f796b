"""`engram review list` and `engram review decide` through the CLI."""

from __future__ import annotations

import json
from datetime import timedelta

from typer.testing import CliRunner

from engram.cli.app import app
from engram.settings import Settings
from engram.store import db
from tests.llm_seed import NOW, add_facts, contradiction, facts_of, merge_case, review

runner = CliRunner()


def seed(settings: Settings) -> tuple[str, str]:
    with db.open_store(settings) as con:
        add_facts(con, "alice", [
            {"id": "f_a", "text": "Alice drinks coffee", "asserted_at": NOW - timedelta(days=9)},
            {"id": "f_b", "text": "Alice quit coffee", "asserted_at": NOW - timedelta(days=1)},
            {"id": "m1", "text": "Alice lives in Berlin"}, {"id": "m2", "text": "Alice lives in Berlin now"},
        ])
        return contradiction(con, "alice", "f_a", "f_b"), merge_case(con, "alice", ["m1", "m2"])


def test_list_shows_pending_cases_with_their_facts(settings: Settings) -> None:
    contra, merge = seed(settings)
    out = runner.invoke(app, ["review", "list", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert {r["id"] for r in rows} == {contra, merge}
    by_id = {r["id"]: r for r in rows}
    assert [f["text"] for f in by_id[contra]["facts"]] == ["Alice drinks coffee", "Alice quit coffee"]
    plain = runner.invoke(app, ["review", "list", "--user", "alice", "--kind", "merge"])
    assert plain.exit_code == 0 and merge in plain.output and contra not in plain.output
    assert "Alice lives in Berlin now" in plain.output
    assert json.loads(runner.invoke(app, ["review", "list", "--user", "bob", "--json"]).output) == []


def test_decide_applies_through_the_validated_path(settings: Settings) -> None:
    contra, merge = seed(settings)
    bad = runner.invoke(app, ["review", "decide", contra, "delete_everything"])
    assert bad.exit_code == 2 and "invalid_params" in bad.output and "action" in bad.output
    bad_winner = runner.invoke(app, ["review", "decide", merge, "merge", "--winner", "f_a"])
    assert bad_winner.exit_code == 2 and "winner" in bad_winner.output
    ok = runner.invoke(app, ["review", "decide", contra, "keep_b", "--reason", "she quit", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["action"] == "keep_b"
    merged = runner.invoke(app, ["review", "decide", merge, "merge", "--winner", "m2"])
    assert merged.exit_code == 0 and "applied merge" in merged.output
    with db.open_store(settings) as con:
        facts = facts_of(con, "alice")
        assert facts["f_a"][1] == "superseded" and facts["m1"][1:3] == ("merged_into", "m2")
        row = review(con, contra)
        assert row["decided_by"] == "human" and json.loads(row["decision"])["reason"] == "she quit"
    again = runner.invoke(app, ["review", "decide", contra, "keep_a"])
    assert again.exit_code == 2 and "already applied" in again.output
    assert "no pending reviews" in runner.invoke(app, ["review", "list"]).output
