"""The archive commands through the CLI: JSON output, dry runs, typed errors with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from engram.cli.app import app
from engram.store import db
from tests.archive_scenario import AS_OF, DUE, USER, archived_ids, live_ids, seed

runner = CliRunner()
AS_OF_ARG = ["--as-of", AS_OF.isoformat()]


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_lists_exports_finalizes_and_restores(settings) -> None:
    seed(settings)
    code, out, _ = invoke("removal-candidates", "--user", USER, *AS_OF_ARG, "--json")
    assert code == 0 and json.loads(out)["counts"] == {"episodes": 2, "facts": 5, "fact_sources": 6}
    code, out, _ = invoke("list-removal-candidates", "--user", USER, "--table", "facts", "--status", "removal",
                          *AS_OF_ARG)
    assert code == 0 and "removal" in out and "f_rm" in out
    code, out, _ = invoke("export-removals", "--user", USER, *AS_OF_ARG, "--dry-run", "--json")
    assert code == 0 and json.loads(out)["rows"] == {"facts": 5, "fact_sources": 6, "episodes": 2}
    assert not Path(settings.archive_dir).exists()
    code, out, _ = invoke("export-removals", "--user", USER, *AS_OF_ARG, "--run-id", "cli-1")
    assert code == 0 and "exported 5 facts, 6 fact_sources, 2 episodes in run cli-1 (3 file(s))" in out
    code, out, _ = invoke("archive-exports", "--status", "exported", "--json")
    assert code == 0 and len(json.loads(out)) == 3
    code, out, _ = invoke("finalize-removal", "--run-id", "cli-1")
    assert code == 0 and "removed 5 facts, 6 fact_sources, 2 episodes" in out
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])
    code, out, err = invoke("restore", "--user", USER, "f_rm", "nope")
    assert code == 0 and "restored 0 episodes, 1 facts, 2 fact_sources" in out and "nope" in err
    with db.open_store(settings) as con:
        assert "f_rm" in live_ids(con, "facts", USER)


def test_cli_errors_are_typed_and_write_nothing(settings) -> None:
    seed(settings)
    code, _, err = invoke("mark-removal", "--user", USER, "f_active", "nope")
    assert code == 2 and "error [invalid_params]: ids: not found" in err
    code, _, err = invoke("removal-candidates", "--table", "kg_edges")
    assert code == 2 and "table:" in err
    code, _, err = invoke("export-removals", "--run-id", "../x", *AS_OF_ARG)
    assert code == 2 and "run_id:" in err
    code, _, err = invoke("finalize-removal", "--abandon")
    assert code == 2 and "export_id" in err
    with db.open_store(settings) as con:
        assert con.execute("select status from facts where id = 'f_active'").fetchall() == [("active",)]
    code, out, _ = invoke("mark-removal", "--user", USER, "--table", "episodes", "e1", "--json")
    assert code == 0 and json.loads(out)["marked"] == 1


def test_cli_finalize_refuses_a_truncated_file(settings) -> None:
    seed(settings)
    code, out, _ = invoke("export-removals", "--user", USER, *AS_OF_ARG, "--json")
    files = json.loads(out)["files"]
    target = Path(settings.archive_dir) / files[0]["path"]
    target.write_bytes(target.read_bytes()[:64])
    code, _, err = invoke("finalize-removal")
    assert code == 2 and "error [archive_corrupt]: finalize refused" in err and "unreadable parquet" in err
    with db.open_store(settings) as con:
        assert DUE[(USER, "facts")] <= live_ids(con, "facts", USER)
    code, out, _ = invoke("finalize-removal", "--abandon", *[a for f in files for a in ("--export-id", f["export_id"])])
    assert code == 0 and "abandoned 3 export(s)" in out
    assert not list(Path(settings.archive_dir).rglob("*.parquet"))
