"""Issue 45 #15: the CLI's help, usage errors, `sql --format csv` and the README's config table."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from engram.cli.app import app
from engram.cli.consolidate import snapshot_line
from engram.config_table import END, START, config_table

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


def _paths(command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            out += _paths(sub, (*path, name))
    return out


def test_help_shows_flags_bare_and_plain_usage_lines(settings) -> None:
    seen = 0
    for path in _paths(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.stdout, path
        usage = next(ln for ln in result.stdout.splitlines() if "Usage:" in ln)
        assert "{" not in usage and "}" not in usage, usage
        seen += 1
    assert seen > 20
    usage = next(ln for ln in runner.invoke(app, ["search", "--help"], prog_name="engram").stdout.splitlines() if "Usage:" in ln)
    assert usage.split() == ["Usage:", "engram", "search", "[OPTIONS]", "QUERY"]


@pytest.mark.parametrize("args, says", [
    (["search", "--user", "a"], "Missing argument 'QUERY'"),
    (["search", "x", "--user", "a", "--bogus"], "No such option: --bogus"),
    (["nosuch"], "No such command 'nosuch'"),
    (["--bogus"], "No such option: --bogus"),
    (["review", "decide"], "Missing argument 'ID'"),
])
def test_usage_errors_are_one_line(settings, args: list[str], says: str) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0
    result = runner.invoke(app, args, prog_name="engram")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error [usage]: ") and says in lines[0], result.stderr
    assert "╭" not in result.stderr and "--help" in lines[0]


def test_json_flag_has_help_on_every_command(settings) -> None:
    for path in (("ingest",), ("consolidate",), ("config",), ("review", "list"), ("snapshot",), ("check",)):
        text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).stdout
        line = next(ln for ln in text.splitlines() if "--json" in ln)
        assert "JSON" in line.replace("--json", ""), (path, line)


def test_sql_csv_writes_lists_and_structs_as_json(settings) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0
    assert runner.invoke(app, ["snapshot"]).exit_code == 0
    result = runner.invoke(app, ["sql", "select ['a', 'b'] as tags, {'k': 1} as s, 'x' as t", "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["tags", "s", "t"]
    assert json.loads(rows[1][0]) == ["a", "b"] and json.loads(rows[1][1]) == {"k": 1} and rows[1][2] == "x"


def test_readme_config_table_is_generated_and_lists_rule_workers() -> None:
    table = README.read_text().split(START, 1)[1].split(END, 1)[0].strip()
    assert "`ENGRAM_RULE_WORKERS`" in table
    assert table == config_table(), "regenerate with: python -m engram.config_table README.md"


def test_the_snapshot_line_prints_a_runnable_query() -> None:
    line = snapshot_line({"snapshot_id": "s1", "path": "/x"})
    assert "..." not in line and 'engram sql "select * from current_facts limit 10"' in line


def test_sql_takes_json_like_every_other_command(settings) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0
    assert runner.invoke(app, ["snapshot"]).exit_code == 0
    result = runner.invoke(app, ["sql", "select 1 as x", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"x": 1}]
    clash = runner.invoke(app, ["sql", "select 1 as x", "--json", "--format", "csv"])
    assert clash.exit_code != 0 and "--json" in clash.output


def test_sql_says_where_relative_paths_are_read_from(settings) -> None:
    """Issue 45 #10: a path relative to the working directory ('data/archive/...') finds nothing; the error
    says paths are read from the snapshot's directory and names the archive's path there."""
    assert runner.invoke(app, ["init"]).exit_code == 0
    assert runner.invoke(app, ["snapshot"]).exit_code == 0
    result = runner.invoke(app, ["sql", "select count(*) from read_parquet("
                                        "'data/archive/table=facts/**/*.parquet', hive_partitioning = true)"])
    assert result.exit_code != 0
    assert "No files found" in result.output and "archive/table=<table>/**/*.parquet" in result.output
