"""db.held_open: one open store across a tenant's stages, readers included, released afterwards."""

from __future__ import annotations

from datetime import datetime

import duckdb
import pytest

from engram.consolidate.runner import run_tenant
from engram.store import db
from engram.store.ingest import add_episodes


def _other_process_can_open(path: str) -> bool:
    """Whether a second DuckDB database instance (what another process gets) can open the file now."""
    import subprocess
    import sys

    code = "import duckdb, sys\ntry:\n    duckdb.connect(sys.argv[1]).close(); print('ok')\nexcept duckdb.Error: print('locked')"
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() == "ok"


def test_readers_share_the_held_store_and_the_hold_ends_with_the_block(settings) -> None:
    add_episodes([{"user_id": "u1", "content": "I moved to Porto last spring."}], settings)
    with db.held_open(settings):
        with db.open_reader(settings) as con:  # a read-only open beside a held one is refused by DuckDB
            assert con.execute("select count(*) from episodes where user_id = 'u1'").fetchone() == (1,)
        with db.held_open(settings), db.open_store(settings) as con:  # nested holds are fine
            assert con.execute("select count(*) from episodes").fetchone() == (1,)
        assert not _other_process_can_open(str(settings.db_path))
    assert _other_process_can_open(str(settings.db_path))
    with db.open_reader(settings) as con:  # a real read-only connection again
        with pytest.raises(duckdb.Error):
            con.execute("create table t (x int)")


def test_hold_store_open_false_keeps_short_connections(settings, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_HOLD_STORE_OPEN", "false")
    from engram.settings import load_settings

    short = load_settings()
    add_episodes([{"user_id": "u1", "content": "I moved to Porto last spring."}], short)
    with db.held_open(short):
        assert _other_process_can_open(str(short.db_path))


def test_a_tenant_run_holds_the_store_and_gives_the_same_facts(settings, monkeypatch) -> None:
    texts = ["I live in Lisbon and work as a nurse.", "My sister Ana plays the cello.", "I drink green tea every morning."]
    add_episodes([{"user_id": "u1", "content": t, "created_at": f"2026-01-0{i + 1}T09:00:00"}
                  for i, t in enumerate(texts)], settings)
    run_tenant(settings, "u1", "run-held", datetime(2026, 2, 1))
    with db.open_reader(settings) as con:
        held = sorted(con.execute("select text, status from facts where user_id = 'u1'").fetchall())
    assert held, "the run made no facts"

    monkeypatch.setenv("ENGRAM_HOLD_STORE_OPEN", "false")
    monkeypatch.setenv("ENGRAM_DB_PATH", str(settings.db_path.with_name("short.duckdb")))
    from engram.settings import load_settings

    short = load_settings()
    add_episodes([{"user_id": "u1", "content": t, "created_at": f"2026-01-0{i + 1}T09:00:00"}
                  for i, t in enumerate(texts)], short)
    run_tenant(short, "u1", "run-short", datetime(2026, 2, 1))
    with db.open_reader(short) as con:
        assert sorted(con.execute("select text, status from facts where user_id = 'u1'").fetchall()) == held


def test_a_reader_migrates_a_store_an_older_engram_wrote_before_reading_it(settings) -> None:
    # a store from before schema 007: search names facts.changed_at, so a plain read-only open would fail
    from engram.query import search_memory
    from tests.query_seed import seed_facts

    with db.open_store(settings) as con:
        seed_facts(settings, con, [{"id": "f1", "text": "The ferry to the island leaves at noon"}])
        con.execute("alter table facts drop column changed_at")
        con.execute("alter table episodes drop column changed_at")
        con.execute("delete from schema_migrations where version = '007_change_marks'")
    db._migrated.clear()  # another process: this one has not migrated the store
    db._current_schema.clear()
    hits = search_memory("ferry island", "facts", 3, "u1", settings=settings)
    assert [h.id for h in hits] == ["f1"]
    with db.open_reader(settings) as con:
        assert con.execute("select count(changed_at) from facts").fetchall() == [(0,)]
        assert ("007_change_marks",) in db.rows(con, "queries/store/applied_migrations")
