"""`engram sql` has a time and a memory limit: a runaway query stops with an error naming the setting
(issue 57, item 6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.cli.app import app

runner = CliRunner()
ENGRAM = str(Path(sys.executable).parent / "engram")
ENDLESS = "with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) as n from r"
HUNGRY = "select length(string_agg(md5(i::varchar), ',')) as n from range(5000000) as t(i)"


@pytest.fixture
def published(settings, tmp_path: Path) -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"user_id": "alice", "content": "I drink green tea", "created_at": "2024-01-01"}) + "\n")
    assert runner.invoke(app, ["ingest", str(rows)]).exit_code == 0
    result = runner.invoke(app, ["snapshot"])
    assert result.exit_code == 0, result.stderr
    return tmp_path


def engram_sql(cwd: Path, query: str, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    """`engram sql -- QUERY` as a user types it, in its own process (a query that never ends cannot hang the tests)."""
    started = time.monotonic()
    done = subprocess.run([ENGRAM, "sql", "--format", "json", "--", query], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    return done, time.monotonic() - started


def test_an_endless_recursive_query_is_stopped_by_the_timeout(published: Path) -> None:
    done, seconds = engram_sql(published, ENDLESS, ENGRAM_SQL_TIMEOUT_S="1")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "error [query_limit]: query: stopped after 1 s" in done.stderr and "ENGRAM_SQL_TIMEOUT_S" in done.stderr
    assert done.stdout == "" and seconds < 60
    quick, _ = engram_sql(published, "select count(*) as n from episodes", ENGRAM_SQL_TIMEOUT_S="1")
    assert quick.returncode == 0 and json.loads(quick.stdout) == [{"n": 1}]  # a query that ends in time answers


def test_a_query_over_the_memory_limit_fails_naming_the_setting(published: Path) -> None:
    done, _ = engram_sql(published, HUNGRY, ENGRAM_SQL_MEMORY_LIMIT="50MB")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "error [query_limit]: query: needs more memory than ENGRAM_SQL_MEMORY_LIMIT allows" in done.stderr
    assert "Out of Memory" in done.stderr and done.stdout == ""
    small, _ = engram_sql(published, "select count(*) as n from episodes", ENGRAM_SQL_MEMORY_LIMIT="50MB")
    assert small.returncode == 0 and json.loads(small.stdout) == [{"n": 1}]


def test_the_limits_are_the_connections_settings(published: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_SQL_MEMORY_LIMIT", "300MB")
    result = runner.invoke(app, ["sql", "--format", "json", "--", "select current_setting('memory_limit') as m, "
                                 "current_setting('max_temp_directory_size') as t"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == [{"m": "286.1 MiB", "t": "572.2 MiB"}]  # spill room: twice the memory


@pytest.mark.parametrize("limit", ["2GB; drop", "2GB'; set lock_configuration = false; --", "lots", "-1GB",
                                   "2 G", "0.5KB", ""])
def test_a_malformed_memory_limit_is_refused_naming_the_setting(published: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 limit: str) -> None:
    monkeypatch.setenv("ENGRAM_SQL_MEMORY_LIMIT", limit)
    result = runner.invoke(app, ["sql", "select 1 as x"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "error [invalid_params]: sql_memory_limit (ENGRAM_SQL_MEMORY_LIMIT):" in result.stderr


def test_the_shell_gets_the_memory_limit_and_only_the_snapshot(published: Path, monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    bin_dir, record = tmp_path / "bin", tmp_path / "started.txt"
    bin_dir.mkdir()
    (bin_dir / "duckdb").write_text(f'#!/bin/sh\nprintf "%s\\n" "$PWD" "$@" > {record}\nexit 0\n')
    (bin_dir / "duckdb").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ENGRAM_SQL_MEMORY_LIMIT", "512MiB")
    assert runner.invoke(app, ["sql"]).exit_code == 0
    cwd, *args = record.read_text().splitlines()
    assert args[1:3] == ["-cmd", f"set allowed_directories = ['{Path(cwd).resolve()}{os.sep}']"]
    assert args[4].startswith("set memory_limit = '512MiB'; set max_temp_directory_size = '1073741824B';")
    assert args[4].endswith("set enable_external_access = false; set lock_configuration = true;")
    record.unlink()
    monkeypatch.setenv("ENGRAM_SQL_MEMORY_LIMIT", "1GB'; set enable_external_access = true; --")
    result = runner.invoke(app, ["sql"])
    assert result.exit_code == 2 and "ENGRAM_SQL_MEMORY_LIMIT" in result.stderr and not record.exists()
