"""`engram sql` never shows private archived rows, not even read straight from the archive's files (issue 57, item 2)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.store import db
from tests.archive_scenario import AS_OF, USER, seed

runner = CliRunner()
TOMORROW = (datetime.now() + timedelta(days=1)).isoformat(timespec="seconds")
ROWS = [{**r, "created_at": "2024-01-01T10:00:00Z"} for r in [
    {"id": "a_pin", "user_id": "alice", "content": "My bank PIN is 4711.", "visibility": "private"},
    {"id": "a_pw", "user_id": "alice", "content": "My password is hunter2.", "visibility": "private"},
    {"id": "a_tea", "user_id": "alice", "content": "I drank green tea in 2019."},
    {"id": "a_live", "user_id": "alice", "content": "I live in Porto."},
    {"id": "b_chess", "user_id": "bob", "content": "I played chess at school."},
]]
SECRETS = ("4711", "hunter2")
ATTACK = "select content from read_parquet('archive/table=episodes/**/*.parquet')"


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def ok(*args: str) -> str:
    code, out, err = invoke(*args)
    assert code == 0, (args, out, err)
    return out


def sql_json(query: str) -> list[dict]:
    return json.loads(ok("sql", "--format", "json", "--", query))


@pytest.fixture
def archived(settings, tmp_path: Path):
    """Two private episodes and two others marked for removal, exported and finalized (the archive's night)."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    ok("ingest", str(rows))
    ok("mark-removal", "--user", "alice", "--table", "episodes", "a_pin", "a_pw", "a_tea")
    ok("mark-removal", "--user", "bob", "--table", "episodes", "b_chess")
    ok("export-removals", "--older-than-days", "0", "--as-of", TOMORROW, "--run-id", "night-1")
    ok("finalize-removal", "--run-id", "night-1")
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from archive_rows where table_name = 'episodes'").fetchall() == [(4,)]
        assert con.execute("select id from episodes").fetchall() == [("a_live",)]
    archive = Path(settings.archive_dir)
    assert any("hunter2" in r[0] for r in _read(archive))  # the archive itself keeps every row
    return settings


def _read(archive: Path) -> list[tuple]:
    import duckdb

    with duckdb.connect() as mem:
        return mem.execute("select content from read_parquet($p)",
                           {"p": str(archive / "table=episodes" / "**" / "*.parquet")}).fetchall()


def test_the_documented_archive_path_shows_no_private_text(archived, monkeypatch) -> None:
    ok("snapshot")
    code, out, err = invoke("sql", "--", ATTACK)
    assert code == 0, err
    assert not any(s in out for s in SECRETS), out
    assert "green tea" in out and "chess" in out  # what is not private stays readable at the same path
    everything = sql_json("select * from read_parquet('archive/**/*.parquet', union_by_name = true)")
    assert {r["id"] for r in everything} == {"a_tea", "b_chess"}
    shown = sql_json("select episode_id, content from archived_episodes order by episode_id")
    assert shown == [{"episode_id": "a_tea", "content": "I drank green tea in 2019."},
                     {"episode_id": "b_chess", "content": "I played chess at school."}]


def test_the_original_archive_files_are_out_of_reach(archived) -> None:
    ok("snapshot")
    original = next(Path(archived.archive_dir).glob("table=episodes/user_id=alice/**/*.parquet"))
    code, out, err = invoke("sql", "--", f"select content from read_parquet('{original}')")
    assert code == 2 and "Permission Error" in err and "hunter2" not in out
    code, out, err = invoke("sql", "--", "select content from read_parquet('archive/../../../archive/**/*.parquet')")
    assert code == 2 and "hunter2" not in out + err


def test_with_include_private_the_snapshot_shows_them(archived, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_SNAPSHOT_INCLUDE_PRIVATE", "true")
    ok("snapshot")
    code, out, err = invoke("sql", "--", ATTACK)
    assert code == 0, err
    assert all(s in out for s in SECRETS) and "green tea" in out
    assert len(sql_json("select * from archived_episodes")) == 4


def test_private_archived_facts_and_their_sources_stay_out(settings) -> None:
    seed(settings)
    with db.open_store(settings) as con:
        con.execute("update facts set is_private = true, visibility = 'private' where id in ('f_rm', 'f_loser')")
    ok("export-removals", "--user", USER, "--as-of", AS_OF.isoformat(), "--run-id", "night-f")
    ok("finalize-removal", "--run-id", "night-f")
    ok("snapshot")
    facts = sql_json("select id, text from read_parquet('archive/table=facts/**/*.parquet') order by id")
    assert [f["id"] for f in facts] == ["f_dep_old", "f_retracted", "f_superseded"]
    sources = sql_json("select distinct fact_id from read_parquet('archive/table=fact_sources/**/*.parquet') "
                       "order by fact_id")
    assert [s["fact_id"] for s in sources] == ["f_dep_old", "f_retracted", "f_superseded"]
    assert [r["fact_id"] for r in sql_json("select fact_id from archived_facts order by fact_id")] == [
        "f_dep_old", "f_retracted", "f_superseded"]


def test_a_snapshot_that_links_the_whole_archive_is_refused(archived) -> None:
    """A snapshot published before this change links `archive` to the archive root: it is not opened."""
    import shutil

    from engram.store.snapshot import current_snapshot

    ok("snapshot")
    path = current_snapshot(archived)
    shutil.rmtree(path / "archive")
    (path / "archive").symlink_to(Path(archived.archive_dir).resolve(), target_is_directory=True)
    code, out, err = invoke("sql", "--", ATTACK)
    assert code == 2 and "error [no_snapshot]" in err and "engram snapshot" in err
    assert "hunter2" not in out
