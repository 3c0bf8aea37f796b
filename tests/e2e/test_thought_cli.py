"""The claim / node / edge / why / kg commands end to end through the typer app."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.store import db
from engram.thoughtdb.kg_extract import extract_candidates, stage_candidates
from tests.thought_seed import claim, edge, episode

U = "alice"
runner = CliRunner()


def _run(*args: str, ok: bool = True) -> str:
    result = runner.invoke(app, list(args))
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2, result.output
    return result.output


def _json(*args: str) -> object:
    return json.loads(_run(*args, "--json"))


@pytest.fixture
def store(settings):
    with db.open_store(settings) as con:
        episode(con, U, "ep1", "Tests are green")
        episode(con, U, "ep2", "CI runs every test")
        episode(con, U, "t1", "Alice works at Acme Corp with Bob Stone", kind="thought")
        claim(con, U, "start", "We can ship on Friday")
        claim(con, U, "a", "Tests are green", sources=["ep1"], confidence=0.9)
        claim(con, U, "b", "CI runs every test", sources=["ep2"], confidence=0.7)
        edge(con, U, "depends_on", "start", "a")
        edge(con, U, "depends_on", "a", "b")
        edge(con, U, "depends_on", "b", "a")
        stage_candidates(con, U, "t1", extract_candidates("Alice works at Acme Corp with Bob Stone. Alice is "
                                                          "great."), 20, 20, 0.0)
    return settings


def test_claim_commands(store) -> None:
    assert {c["id"] for c in _json("claim", "list", "--user", U)} == {"start", "a", "b"}
    res = _json("claim", "supersede", "a", "--user", U, "--text", "Tests are mostly green", "--source-ref", "ep2")
    new_id = res["claim_id"]
    assert _json("claim", "show", "a", "--user", U, "--no-follow")["status"] == "superseded"
    shown = _json("claim", "show", new_id, "--user", U)
    assert shown["text"] == "Tests are mostly green" and shown["source_refs"] == ["ep1", "ep2"]
    _json("claim", "same-as", "b", new_id, "--user", U)
    assert _json("claim", "show", "b", "--user", U)["id"] == new_id
    out = _run("claim", "retract", "start", "--user", U)
    assert "retracted start" in out
    assert [c["id"] for c in _json("claim", "list", "--user", U, "--status", "retracted")] == ["start"]
    err = _run("claim", "retract", "missing", "--user", U, ok=False)
    assert "claim_id: unknown claim" in err
    err = _run("claim", "supersede", new_id, "--user", U, "--text", "x", "--source-ref", "nope", ok=False)
    assert "source_refs: unknown episode id" in err
    assert "Missing option '--user'" in _run("claim", "list", ok=False)


def test_node_and_edge_commands(store) -> None:
    node_id = _json("node", "create", "--user", U, "--type", "Decision", "--title", "Ship Friday",
                    "--source-ref", "ep1")["node_id"]
    assert _json("node", "show", node_id, "--user", U)["title"] == "Ship Friday"
    edge_id = _json("edge", "create", "--user", U, "--type", "depends_on", "--from", node_id, "--to", "start",
                    "--source-ref", "ep1")["edge_id"]
    assert [e["id"] for e in _json("edge", "list", "--user", U, "--from", node_id)] == [edge_id]
    assert _json("edge", "show", edge_id, "--user", U)["to_id"] == "start"
    err = _run("node", "create", "--user", U, "--type", "Decision", "--title", "x", "--source-ref", "ghost",
               ok=False)
    assert "source_refs: unknown episode id" in err
    err = _run("node", "create", "--user", U, "--type", "Decision", "--title", "x", ok=False)
    assert "source_refs: at least one episode id is required" in err
    _run("node", "retract", node_id, "--user", U)
    assert _json("node", "list", "--user", U, "--status", "retracted")[0]["id"] == node_id
    text = _run("why", "node", node_id, "--user", U)  # the node itself is retracted; its supports still show
    assert "start claim/fact" in text and "support set (rule): a" in text
    assert "the start itself is retracted" in text


def test_why_command_and_save(store) -> None:
    r = _json("why", "claim", "start", "--user", U)
    assert {n["id"] for n in r["nodes"]} == {"start", "a", "b", "ep1", "ep2"}
    assert len(r["clusters"]) == 1 and r["support_set"] == ["a"]
    text = _run("why", "claim", "start", "--user", U, "--depth", "1")
    assert "truncated" in text and "support set (rule): a" in text
    saved = _json("why", "claim", "start", "--user", U, "--save")["saved_node_id"]
    assert _json("node", "show", saved, "--user", U)["node_type"] == "Summary"
    err = _run("why", "claim", "start", "--user", U, "--as-of", "soon", ok=False)
    assert "as_of: not an ISO-8601 time" in err


def test_kg_commands(store) -> None:
    listed = _json("kg", "candidates", "--user", U)
    names = {e["norm_name"]: e["id"] for e in listed["entities"]}
    assert {"acme corp", "bob stone", "alice"} <= set(names)
    err = _run("kg", "moderate", "--user", U, "--approve", f"{names['alice']},nope", ok=False)
    assert "approve: unknown candidate id(s)" in err and "nope" in err
    assert _json("kg", "candidates", "--user", U, "--status", "approved") == {"entities": [], "edges": []}
    res = _json("kg", "moderate", "--user", U, "--approve", f"{names['alice']},{names['acme corp']}",
                "--reject", names["bob stone"])
    assert (res["approved"], res["rejected"], res["entities_created"]) == (2, 1, 2)
    assert len(_json("kg", "candidates", "--user", U, "--status", "approved")["entities"]) == 2
