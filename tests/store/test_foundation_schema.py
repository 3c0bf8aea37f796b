"""Schema migrations: numbered idempotent files, recorded in schema_migrations, re-runs keep data."""

from __future__ import annotations

import hashlib
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes

CORE_TABLES = {
    "episodes", "facts", "fact_sources", "fact_events", "nodes", "edges", "kg_entities",
    "kg_edges", "kg_entity_candidates", "kg_edge_candidates", "llm_reviews", "runs", "run_leases",
}
VIEWS = {"active_facts", "fact_lineage", "review_queue"}


def _tables(con: db.Connection) -> set[str]:
    return {r[0] for r in con.execute(
        "select table_name from information_schema.tables where table_type = 'BASE TABLE'"
    ).fetchall()}


def test_fresh_store_has_every_core_table_view_and_a_version_row(settings: Settings) -> None:
    with db.connect(settings.db_path) as con:
        applied = db.migrate(con)
        assert CORE_TABLES <= _tables(con)
        views = {r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_type = 'VIEW'"
        ).fetchall()}
        assert VIEWS <= views
        versions = con.execute("select version, checksum from schema_migrations order by version").fetchall()
    files = sorted((db.SQL_DIR / "schema").glob("*.sql"))
    assert applied == [p.stem for p in files]
    assert [v for v, _ in versions] == [p.stem for p in files]
    core = dict(versions)["001_core"]
    assert core == hashlib.sha256((db.SQL_DIR / "schema" / "001_core.sql").read_bytes()).hexdigest()


def test_every_core_table_has_user_id(con: db.Connection) -> None:
    without = con.execute(
        "select t.table_name from information_schema.tables as t "
        "where t.table_type = 'BASE TABLE' and t.table_name <> 'schema_migrations' "
        "and not exists (select 1 from information_schema.columns as c "
        "where c.table_name = t.table_name and c.column_name = 'user_id')"
    ).fetchall()
    assert without == []


def test_migrating_twice_is_harmless_and_keeps_data(settings: Settings) -> None:
    with db.connect(settings.db_path) as con:
        db.migrate(con)
        add_episodes(
            [{"user_id": "u1", "content": "kept across migrations", "created_at": "2024-01-01T00:00:00"}],
            settings, con=con,
        )
        first = con.execute("select version, applied_at from schema_migrations order by version").fetchall()
        again = db.migrate(con)
        assert again == []
        assert db.migrate(con) == []
        second = con.execute("select version, applied_at from schema_migrations order by version").fetchall()
        content = con.execute("select content from episodes").fetchall()
    assert second == first  # no duplicate version rows, original applied_at kept
    assert content == [("kept across migrations",)]


def test_reopening_the_store_in_a_new_process_state_migrates_again_without_error(settings: Settings) -> None:
    with db.open_store(settings) as con:
        add_episodes([{"user_id": "u", "content": "x", "created_at": "2024-01-01"}], settings, con=con)
    db._migrated.clear()  # as if a new process opened the file
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from episodes").fetchall() == [(1,)]
        assert con.execute("select count(*) from schema_migrations").fetchall()[0][0] >= 1


def test_a_new_schema_file_is_applied_once_and_recorded(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(db.SQL_DIR, sql_dir)
    monkeypatch.setattr(db, "SQL_DIR", sql_dir)
    with db.connect(settings.db_path) as con:
        db.migrate(con)
        (sql_dir / "schema" / "999_extra.sql").write_text(
            "create table if not exists extra_things (user_id varchar not null, n integer);\n"
            "alter table episodes add column if not exists extra_note varchar;\n"
        )
        assert db.migrate(con) == ["999_extra"]
        assert db.migrate(con) == []
        assert con.execute(
            "select count(*) from schema_migrations where version = '999_extra'"
        ).fetchall() == [(1,)]
        cols = {r[0] for r in con.execute(
            "select column_name from information_schema.columns where table_name = 'episodes'"
        ).fetchall()}
    assert "extra_note" in cols


def test_a_failing_schema_file_rolls_back_and_records_nothing(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql_dir = tmp_path / "sql"
    shutil.copytree(db.SQL_DIR, sql_dir)
    (sql_dir / "schema" / "999_broken.sql").write_text(
        "create table if not exists half_done (user_id varchar);\nthis is not sql;\n"
    )
    monkeypatch.setattr(db, "SQL_DIR", sql_dir)
    with db.connect(settings.db_path) as con:
        with pytest.raises(Exception):
            db.migrate(con)
        assert "half_done" not in _tables(con)
        assert con.execute(
            "select count(*) from schema_migrations where version = '999_broken'"
        ).fetchall() == [(0,)]


def test_effective_confidence_macro_decays(con: db.Connection) -> None:
    (value,) = con.execute(
        "select effective_confidence(0.8, $t0, $t1, 0.01)",
        {"t0": datetime(2024, 1, 1), "t1": datetime(2024, 1, 11)},
    ).fetchall()[0]
    assert value == pytest.approx(0.8 * 2.718281828 ** -0.1, rel=1e-6)
