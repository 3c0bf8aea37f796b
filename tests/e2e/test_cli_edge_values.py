"""Edge values at the CLI's entry (issue 44, items 5 and 11): one clear line and exit 2, never a traceback."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.errors import InvalidInput

runner = CliRunner()
GOOD = {"user_id": "alice", "content": "I like tea", "created_at": "2024-01-01T10:00:00Z"}


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def ingested(settings, tmp_path: Path) -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(GOOD) + "\n")
    code, _, err = invoke("ingest", str(rows))
    assert code == 0, err
    return Path(settings.db_path)


@pytest.mark.parametrize("as_of", ["0001-01-01", "9999-12-31"])
def test_consolidate_as_of_outside_the_range_is_one_line_exit_2(ingested: Path, as_of: str) -> None:
    code, out, err = invoke("consolidate", "--as-of", as_of, "--dry-run")
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error [invalid_params]: as_of: --as-of "), err
    assert "1900-01-01" in err and "9998-12-31" in err  # the accepted range
    assert "OverflowError" not in out + err and "tenant_failed" not in err and "Traceback" not in err
    with duckdb.connect(str(ingested), read_only=True) as con:
        assert con.execute("select count(*) from runs").fetchone() == (0,)  # no run started, no tenant failed


@pytest.mark.parametrize("as_of", [datetime(1, 1, 1), datetime(9999, 12, 31), "0001-01-01T00:00:00"])
def test_the_nightly_flow_refuses_an_as_of_outside_the_range(settings, as_of) -> None:
    from engram.flows.nightly import nightly_consolidation

    with pytest.raises(InvalidInput, match="as_of: "):
        nightly_consolidation.fn(as_of=as_of, dry_run=True)  # checked before anything else runs


def test_the_range_ends_are_runs() -> None:
    from engram import clock

    assert clock.run_as_of(clock.AS_OF_MIN) == clock.AS_OF_MIN
    assert clock.run_as_of(clock.AS_OF_MAX) == clock.AS_OF_MAX
    assert clock.run_as_of("9998-12-31T23:59:59Z") == datetime(9998, 12, 31, 23, 59, 59)


@pytest.mark.parametrize("as_of", ["1900-01-01", "9998-12-31T23:59:59"])
def test_consolidate_at_the_ends_of_the_range_finishes_the_tenant(ingested: Path, as_of: str) -> None:
    code, out, err = invoke("consolidate", "--as-of", as_of, "--json")  # writes: archive and publish run too
    assert code == 0, err
    result = json.loads(out)
    assert list(result["tenants"]) == ["alice"] and "error" not in json.dumps(result["tenants"]).lower()
    assert "path" in result["snapshot"]


@pytest.mark.parametrize(("args", "field"), [
    (["removal-candidates", "--as-of", "0001-01-01"], "as_of: --as-of"),
    (["removal-candidates", "--older-than-days", "99999999999"], "older_than_days: --older-than-days"),
    (["export-removals", "--older-than-days", "99999999999"], "older_than_days: --older-than-days"),
    (["export-removals", "--as-of", "0001-01-05", "--older-than-days", "10"], "as_of: --as-of"),
])
def test_archive_dates_that_overflow_name_the_option(ingested: Path, args: list[str], field: str) -> None:
    code, out, err = invoke(*args)
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error [invalid_params]: {field} "), err
    assert "OverflowError" not in err and "internal_error" not in err


def test_archive_dates_at_the_edge_still_answer(ingested: Path) -> None:
    code, out, err = invoke("removal-candidates", "--as-of", "0001-01-01", "--older-than-days", "0")
    assert code == 0 and "nothing is due" in out, err
    code, out, err = invoke("removal-candidates", "--as-of", "9999-12-31")
    assert code == 0 and "nothing is due" in out, err


RAW = "\x1b[31mred\x07\u202eevil\rover"


def test_sql_csv_escapes_control_characters_on_stdout_and_keeps_them_in_a_file(ingested: Path,
                                                                              tmp_path: Path) -> None:
    code, _, err = invoke("snapshot")
    assert code == 0, err
    query = ("select chr(27) || '[31mred' || chr(7) || chr(8238) || 'evil' || chr(13) || 'over' as \"s\", "
             "'two' || chr(10) || 'lines' as nl, 42 as n, chr(27) || 'x' as \"h" + "\x1b" + "\"")
    code, out, err = invoke("sql", query, "--format", "csv")
    assert code == 0, err
    assert not any(ch in out for ch in "\x1b\x07\u202e\r"), repr(out)
    rows = list(csv.reader(io.StringIO(out)))
    assert rows == [["s", "nl", "n", "h\\x1b"], ["\\x1b[31mred\\x07\\u202eevil\\rover", "two\nlines", "42", "\\x1bx"]]
    target = tmp_path / "exact.csv"
    code, _, err = invoke("sql", query, "--format", "csv", "--out", str(target))
    assert code == 0, err
    with target.open(newline="", encoding="utf-8") as fh:
        assert list(csv.reader(fh))[1] == [RAW, "two\nlines", "42", "\x1bx"]  # a file keeps exact values


def test_a_csv_cell_longer_than_pythons_default_limit_is_ingested(settings, tmp_path: Path) -> None:
    long_text = "tea " * 50_000  # 200,000 characters: over csv's default 131,072
    path = tmp_path / "rows.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["user_id", "content", "created_at"])
        writer.writerow(["alice", long_text, "2024-01-01T10:00:00Z"])
        writer.writerow(["alice", "x" * 1_000_001, "2024-01-02T10:00:00Z"])
    code, _, err = invoke("ingest", str(path))
    assert code == 2 and "line 3: content: longer than 1000000 characters" in err, err  # the row, not the file
    code, out, err = invoke("ingest", str(path), "--skip-invalid")
    assert code == 0 and "ingested 1 episode(s)" in out, err
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        assert con.execute("select length(content) from episodes").fetchall() == [(len(long_text),)]


def test_explain_on_a_zero_byte_store_is_one_line(settings) -> None:
    Path(settings.db_path).write_bytes(b"")
    code, out, err = invoke("explain", "f_1", "--user", "alice")
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error [db_error]: cannot open store"), err
    assert "empty" in lines[0] and "internal_error" not in err and "Traceback" not in err
    assert Path(settings.db_path).read_bytes() == b""  # never recreated


def test_a_full_disk_when_the_store_is_created_is_disk_full_exit_1(settings, monkeypatch) -> None:
    from engram.store import db

    real = db.duckdb.connect

    def full(path, *args, **kwargs):  # fault seam: DuckDB on a full disk creates the file, then cannot write it
        if str(path).endswith("engram.duckdb"):
            Path(path).touch()
            raise duckdb.IOException(f'Could not write file "{path}": No space left on device')
        return real(path, *args, **kwargs)

    monkeypatch.setattr(db.duckdb, "connect", full)
    for args in (["init"], ["ingest", str(Path(settings.db_path).parent / "rows.jsonl")]):
        Path(settings.db_path).parent.joinpath("rows.jsonl").write_text(json.dumps(GOOD) + "\n")
        code, out, err = invoke(*args)
        assert code == 1, out + err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error [disk_full]: cannot open store"), err
        assert "No space left on device" in lines[0]
        assert not Path(settings.db_path).exists()  # no 0-byte store left to fail the next command as empty
