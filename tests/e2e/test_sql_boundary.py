"""`engram sql` is a boundary: analysts' SQL reads the snapshot and the archive, nothing else (issue 44, item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.cli.app import app

runner = CliRunner()
ROWS = [{"user_id": "alice", "content": "I drink green tea every morning", "created_at": "2024-01-01T10:00:00Z"},
        {"user_id": "alice", "content": "My password is hunter2.", "created_at": "2024-01-02T10:00:00Z",
         "visibility": "private"}]


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def published(settings, tmp_path: Path) -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert invoke("ingest", str(rows))[0] == 0
    code, _, err = invoke("snapshot")
    assert code == 0, err
    return Path(settings.db_path)


def test_analyst_sql_reads_the_snapshot_views(published: Path) -> None:
    code, out, err = invoke("sql", "select count(*) as n from episodes", "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"n": 1}]  # the private episode is not in the snapshot
    code, out, err = invoke("sql", "select count(*) as n from archived_facts", "--format", "json")
    assert code == 0 and json.loads(out) == [{"n": 0}], err


@pytest.mark.parametrize("query", [
    "attach '{store}' as live (read_only)",
    "select content from read_parquet('{store}')",
    "select * from read_csv('/etc/passwd')",
    "select * from read_text('{store}')",
    "copy (select 1 as x) to '{out}'",
    "set enable_external_access = true",
    "set lock_configuration = false",
    "install httpfs",
])
def test_analyst_sql_cannot_reach_the_live_store_or_write_files(published: Path, tmp_path: Path, query: str) -> None:
    out = tmp_path / "leak.csv"
    code, stdout, err = invoke("sql", query.format(store=published, out=out))
    assert code == 2 and "error [invalid_params]: query:" in err, (code, stdout, err)
    assert "hunter2" not in stdout + err and not out.exists()


def test_the_boundary_holds_inside_a_select(published: Path, tmp_path: Path) -> None:
    code, stdout, err = invoke("sql", f"select * from read_text('{published.parent / 'rows.jsonl'}')")
    assert code == 2 and "Permission Error" in err and "hunter2" not in stdout
    code, _, err = invoke("sql", "select * from read_parquet('../../engram.duckdb')")
    assert code == 2 and "Permission Error" in err


def test_relative_out_paths_are_the_users(published: Path, tmp_path: Path) -> None:
    code, _, err = invoke("sql", "select count(*) as n from facts", "--format", "csv", "--out", "facts.csv")
    assert code == 0, err
    assert (tmp_path / "facts.csv").read_text().splitlines()[0] == "n"
