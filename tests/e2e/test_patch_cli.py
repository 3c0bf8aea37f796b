"""`engram patch apply|rollback|list|show` end to end through the typer app."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.store import db
from tests.thought_seed import claim, episode

U = "alice"
runner = CliRunner()


def _invoke(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output


def _rows(settings) -> dict[str, list[tuple]]:
    with db.open_store(settings) as con:
        return {t: con.execute(f"select * from {t} order by all").fetchall()
                for t in ("facts", "nodes", "edges", "fact_sources")}


@pytest.fixture
def store(settings):
    with db.open_store(settings) as con:
        episode(con, U, "ep1", "We picked DuckDB")
        claim(con, U, "c1", "The store is SQLite", sources=["ep1"])
    return settings


def test_apply_dry_run_rollback(store, tmp_path) -> None:
    patch = {"id": "cli-1", "ops": [
        {"op": "supersede", "claim_id": "c1", "text": "The store is DuckDB", "source_refs": ["ep1"]},
        {"op": "create_node", "key": "d", "node_type": "Decision", "title": "Use DuckDB", "source_refs": ["ep1"]},
    ]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(patch))
    before = _rows(store)

    dry = json.loads(_invoke("patch", "apply", str(path), "--user", U, "--dry-run", "--json"))
    assert dry["status"] == "dry_run" and _rows(store) == before

    res = json.loads(_invoke("patch", "apply", str(path), "--user", U, "--json"))
    assert res["patch_id"] == "cli-1" and res["changes"]["nodes"] == {"created": 1, "changed": 0}
    assert _rows(store) != before
    assert "already applied" in _invoke("patch", "apply", str(path), "--user", U, code=2)
    listed = json.loads(_invoke("patch", "list", "--user", U, "--json"))
    assert [(p["id"], p["status"]) for p in listed] == [("cli-1", "applied")]
    shown = json.loads(_invoke("patch", "show", "cli-1", "--user", U, "--json"))
    assert [o["op"] for o in shown["ops"]["ops"]] == ["supersede", "create_node"]

    out = _invoke("patch", "rollback", "cli-1", "--user", U)
    assert "rolled_back" in out and _rows(store) == before
    assert "already rolled_back" in _invoke("patch", "rollback", "cli-1", "--user", U, code=2)


def test_invalid_patch_names_op_and_field(store, tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"ops": [{"op": "retract", "id": "c1", "source_refs": []}]}))
    before = _rows(store)
    out = _invoke("patch", "apply", str(path), "--user", U, code=2)
    assert "invalid_input" in out or "ops.0.source_refs" in out
    assert "ops.0.source_refs" in out
    assert _rows(store) == before


def test_patch_commands_open_the_tenants_shard(settings, monkeypatch, tmp_path) -> None:
    from engram.settings import load_settings
    from engram.store.sharding import for_tenant

    monkeypatch.setenv("ENGRAM_SHARDS", "2")
    shard = for_tenant(load_settings(), U)
    with db.open_store(shard) as con:
        episode(con, U, "ep1", "We picked DuckDB")
        claim(con, U, "c1", "The store is SQLite", sources=["ep1"])
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"id": "sh-1", "ops": [{"op": "retract", "id": "c1", "source_refs": ["ep1"]}]}))
    assert json.loads(_invoke("patch", "apply", str(path), "--user", U, "--json"))["status"] == "applied"
    with db.open_store(shard, read_only=True) as con:
        assert con.execute("select status from facts where id = 'c1'").fetchall() == [("retracted",)]
    _invoke("patch", "rollback", "sh-1", "--user", U)
    with db.open_store(shard, read_only=True) as con:
        assert con.execute("select status from facts where id = 'c1'").fetchall() == [("active",)]
