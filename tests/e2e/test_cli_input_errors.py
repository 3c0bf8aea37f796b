"""Bad input and runtime failures end a command with one clear line, never a traceback (--debug shows it)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.errors import StoreMissing
from engram.store import db

runner = CliRunner()
GOOD = {"user_id": "alice", "content": "I like tea", "created_at": "2024-01-01T10:00:00Z"}


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("line", "needle"), [
    ('{"user_id": "a", "content": "x", "created_at": "2024-01-01", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "line 1: json: JSON nested too deeply"),
    ('{"user_id": "a", "content": "x", "created_at": ' + "9" * 5000 + "}", "line 1: json: unreadable JSON value"),
    ('{"user_id": "a", "content": "x \\ud800 y", "created_at": "2024-01-01"}', "line 1: content: contains a lone surrogate"),
    ('{"user_id": "a", "content": "x", "tags": ["\\udfff"], "created_at": "2024-01-01"}', "line 1: tags: contains a lone surrogate"),
])
def test_unreadable_records_are_one_line_each(settings, tmp_path: Path, line: str, needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n" + json.dumps(GOOD) + "\n")
    code, _, err = invoke("ingest", str(path))
    assert code == 2 and needle in err and "Traceback" not in err
    assert err.count(needle) == 1  # printed once, not twice
    code, out, err = invoke("ingest", str(path), "--skip-invalid")
    assert code == 0 and "ingested 1 episode(s)" in out and needle in err


def test_csv_epoch_created_at_is_accepted(settings, tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("user_id,content,created_at\nalice,hello,1704103200\nalice,later,1704103200.5\n")
    code, out, err = invoke("ingest", str(path))
    assert code == 0, err
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        got = con.execute("select strftime(created_at, '%Y-%m-%dT%H:%M:%S') from episodes order by 1").fetchall()
    assert got == [("2024-01-01T10:00:00",), ("2024-01-01T10:00:00",)]


def test_empty_file_and_directory_get_clear_messages(settings, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _, err = invoke("ingest", str(empty))
    assert code == 0 and "no records in the file" in err
    code, _, err = invoke("ingest", str(tmp_path))
    assert code == 2 and "is a directory" in err and "not found" not in err


def test_disk_full_during_ingest_is_one_line_exit_1(settings, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    real = db.execute

    def full(con, name, **params):  # fault seam: DuckDB's own error when the disk fills mid-commit
        if name == "queries/store/insert_episodes":
            raise duckdb.TransactionException("Failed to commit: could not write file: No space left on device")
        return real(con, name, **params)

    monkeypatch.setattr(db, "execute", full)
    code, _, err = invoke("ingest", str(path))
    assert code == 1 and "error [disk_full]: no space left" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = invoke("--debug", "ingest", str(path))
    assert code == 1 and "Traceback" in err and "TransactionException" in err


def test_fake_llm_ask_is_a_clear_llm_error(settings, monkeypatch) -> None:
    from tests.query_seed import seed_facts

    with db.open_store(settings) as con:
        seed_facts(settings, con, [{"user_id": "alice", "text": t} for t in
                                   ("The user drinks green tea", "The user drinks tea every morning")])
    monkeypatch.setenv("ENGRAM_LLM", "fake")
    code, _, err = invoke("ask", "what tea does the user drink?", "--user", "alice")
    assert code == 1 and "error [llm_error]" in err and "GroundedAnswer" in err and "Traceback" not in err


def test_a_store_removed_while_in_use_is_never_recreated(settings) -> None:
    with db.open_store(settings):
        pass
    Path(settings.db_path).unlink()
    with pytest.raises(StoreMissing, match="removed while engram was using it"), db.open_store(settings):
        pass
    assert not Path(settings.db_path).exists()


def test_an_unknown_stage_is_one_line_before_any_flow_runs(settings, tmp_path: Path, monkeypatch) -> None:
    import engram.cli.consolidate as cli_consolidate

    started: list[str] = []
    monkeypatch.setattr(cli_consolidate, "run_nightly", lambda *a, **k: started.append("flow") or {})
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    assert invoke("ingest", str(path))[0] == 0
    code, _, err = invoke("consolidate", "--stage", "bogus")
    assert code == 2 and "stages: unknown ['bogus']" in err and "Traceback" not in err
    assert started == []


def test_a_failed_tenant_makes_consolidate_exit_1_after_its_report(settings, tmp_path: Path, monkeypatch) -> None:
    import engram.cli.consolidate as cli_consolidate

    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    assert invoke("ingest", str(path))[0] == 0
    result = {"run_id": "run-x", "as_of": "2026-11-27T03:00:00", "dry_run": False, "snapshot": None,
              "tenants": {"alice": {"failed": "StoreError: archive dir unwritable"},
                          "bob": {"embed": {"episodes": 0}}}}
    monkeypatch.setattr(cli_consolidate, "run_nightly", lambda *a, **k: result)
    code, out, err = invoke("consolidate")
    assert code == 1 and "failed (see its runs rows" in out
    assert "error [tenant_failed]: 1 tenant(s) failed" in err and "Traceback" not in err
    code, out, _ = invoke("consolidate", "--json")
    assert code == 1 and json.loads(out)["tenants"]["alice"]["failed"].startswith("StoreError")
