"""Archive operations against a real store: due selection, export, verified finalize, restore, mark."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from engram.archive import ops as archive
from engram.archive.nightly import archive_due
from engram.archive.restore import restore
from engram.errors import InvalidInput
from engram.store import db
from tests.archive_scenario import (
    AS_OF,
    DUE,
    OTHER,
    TABLE_KEYS,
    USER,
    archived_ids,
    live_ids,
    parquet_ids,
    seed,
    snapshot,
    violations,
)


@pytest.fixture
def seeded(settings):
    seed(settings)
    return settings


def snapshots(settings) -> dict[str, dict]:
    with db.open_store(settings) as con:
        return {t: snapshot(con, t) for t in TABLE_KEYS}


def manifest(settings) -> list[tuple]:
    with db.open_store(settings) as con:
        return con.execute("select export_id, table_name, user_id, status, row_count, finalized_rows"
                           " from archive_exports order by export_id").fetchall()


def parquet_files(settings) -> list[Path]:
    return sorted(Path(settings.archive_dir).rglob("*.parquet"))


def test_due_rows_follow_retention_statuses_and_merge_pointers(seeded) -> None:
    found = archive.list_removal_candidates(seeded, as_of=AS_OF, sample=100)
    got: dict[tuple[str, str], set[str]] = {}
    for s in found["sample"]:
        got.setdefault((s["user_id"], s["table"]), set()).add(s["id"])
    assert got == DUE  # f_top is due by age but f_mid (live) points to it; f_dep_new and e_rm_new are too young
    assert found["counts"] == {"episodes": 3, "facts": 6, "fact_sources": 7}
    assert found["total"] == 9
    deprecated = archive.list_removal_candidates(seeded, user_id=USER, table="facts", status="deprecated", as_of=AS_OF)
    assert deprecated["counts"] == {"facts": 1, "fact_sources": 1}
    assert [g["status"] for g in deprecated["groups"]] == ["deprecated"]
    younger = archive.list_removal_candidates(seeded, user_id=USER, table="facts", older_than_days=3, as_of=AS_OF,
                                              sample=100)
    ids = {s["id"] for s in younger["sample"]}
    assert {"f_dep_new", "f_top", "f_mid"} <= ids  # f_mid is due now, so f_top is no longer held


@pytest.mark.parametrize("kwargs, field", [
    ({"table": "fact_sources"}, "table"), ({"table": "nodes"}, "table"),
    ({"table": "episodes", "status": "deprecated"}, "status"), ({"status": "active"}, "status"),
    ({"older_than_days": -1}, "older_than_days"),
])
def test_bad_filters_name_the_field(seeded, kwargs: dict, field: str) -> None:
    with pytest.raises(InvalidInput, match=field):
        archive.list_removal_candidates(seeded, **kwargs)
    with pytest.raises(InvalidInput, match=field):
        archive.export_removals(seeded, **kwargs)


def test_dry_runs_write_nothing(seeded) -> None:
    before = snapshots(seeded)
    assert archive.export_removals(seeded, as_of=AS_OF, dry_run=True)["rows"] == {
        "facts": 6, "fact_sources": 7, "episodes": 3}
    assert archive_due(seeded, None, AS_OF, "run-dry", dry_run=True) == {
        "due_facts": 6, "due_fact_sources": 7, "due_episodes": 3, "pending_exports": 0}
    assert archive.mark_removal(seeded, USER, ["f_active"], dry_run=True)["marked"] == 1
    assert archive.finalize_removal(seeded, dry_run=True)["rows"] == {"facts": 0, "fact_sources": 0, "episodes": 0}
    assert snapshots(seeded) == before
    assert manifest(seeded) == [] and parquet_files(seeded) == []
    archive.export_removals(seeded, as_of=AS_OF, run_id="r1")
    assert archive.finalize_removal(seeded, dry_run=True)["rows"] == {"facts": 6, "fact_sources": 7, "episodes": 3}
    assert restore(seeded, USER, dry_run=True)["rows"] == {"episodes": 0, "facts": 0, "fact_sources": 0}
    assert snapshots(seeded) == before


def test_round_trip_keeps_every_column_equal(seeded) -> None:
    before = snapshots(seeded)
    counts = archive_due(seeded, None, AS_OF, "run-1")
    assert counts == {"exported_facts": 6, "exported_fact_sources": 7, "exported_episodes": 3,
                      "archived_facts": 6, "archived_fact_sources": 7, "archived_episodes": 3,
                      "files": 6, "resumed_rows": 0}
    with db.open_store(seeded) as con:
        assert violations(con) == {}
        for (user, table), due in DUE.items():
            assert live_ids(con, table, user).isdisjoint(due)
            assert archived_ids(con, table, user) == sorted(due)
        events = con.execute("select fact_id, status_before, status_after, run_id from fact_events"
                             " where action = 'archived' order by fact_id").fetchall()
    assert [e[0] for e in events] == sorted(DUE[(USER, "facts")] | DUE[(OTHER, "facts")])
    assert {(e[2], e[3]) for e in events} == {("archived", "run-1")}
    # the archive holds every column of every archived row, equal to the live row before
    with duckdb.connect() as mem:
        for table in TABLE_KEYS:
            files = [str(p) for p in (Path(seeded.archive_dir) / f"table={table}").rglob("*.parquet")]
            cur = mem.execute("select * from read_parquet($f, hive_partitioning = false)", {"f": files})
            names = [d[0] for d in cur.description]
            keys = [k.strip() for k in TABLE_KEYS[table].split(",")]
            for row in cur.fetchall():
                rec = dict(zip(names, row, strict=True))
                original = before[table][tuple(rec[k] for k in keys)]
                assert tuple(json.loads(v) if names[i] == "metadata" and v else v for i, v in enumerate(row)) == \
                    tuple(json.loads(v) if names[i] == "metadata" and v else v for i, v in enumerate(original))
    first = restore(seeded, USER)
    second = restore(seeded, OTHER)
    assert first["rows"] == {"episodes": 2, "facts": 5, "fact_sources": 6}
    assert second["rows"] == {"episodes": 1, "facts": 1, "fact_sources": 1}
    assert snapshots(seeded) == before
    again = restore(seeded, USER)
    assert again["rows"] == {"episodes": 0, "facts": 0, "fact_sources": 0}
    with db.open_store(seeded) as con:
        assert violations(con) == {}
        restored = con.execute("select fact_id from fact_events where action = 'restored' order by 1").fetchall()
        assert [r[0] for r in restored] == sorted(DUE[(USER, "facts")] | DUE[(OTHER, "facts")])
        assert con.execute("select count(*) from archive_rows where restored_at is null").fetchall() == [(0,)]


@pytest.mark.slow
def test_archive_due_twice_changes_nothing_and_restored_rows_are_held(seeded) -> None:
    archive_due(seeded, USER, AS_OF, "run-1")
    after_first = snapshots(seeded)
    second = archive_due(seeded, USER, AS_OF, "run-2")
    assert second["files"] == 0 and sum(v for k, v in second.items() if k.startswith("archived_")) == 0
    assert snapshots(seeded) == after_first
    assert restore(seeded, USER, ids=["f_rm", "missing"])["not_archived"] == ["missing"]
    # a restored row is held for a retention window after its restore, measured from the restore time
    assert archive_due(seeded, USER, AS_OF, "run-3")["archived_facts"] == 0
    later = datetime.now() + timedelta(days=31)
    assert archive_due(seeded, USER, later, "run-4")["archived_facts"] >= 1
    with db.open_store(seeded) as con:
        assert "f_rm" in archived_ids(con, "facts", USER)
        assert violations(con) == {}
        assert con.execute("select count(*) from archive_rows where row_id = 'f_rm'").fetchall() == [(2,)]


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "delete", "flip"])
def test_damaged_file_makes_finalize_refuse_and_rows_stay_live(seeded, damage: str) -> None:
    before = snapshots(seeded)
    exported = archive.export_removals(seeded, user_id=USER, as_of=AS_OF, run_id="r1")
    facts_file = next(Path(seeded.archive_dir) / f["path"] for f in exported["files"] if f["table"] == "facts")
    data = facts_file.read_bytes()
    if damage == "truncate":
        facts_file.write_bytes(data[: len(data) - 100])
    elif damage == "delete":
        facts_file.unlink()
    else:
        facts_file.write_bytes(data[:200] + bytes([data[200] ^ 1]) + data[201:])
    with pytest.raises(archive.ArchiveIntegrityError, match="finalize refused") as err:
        archive.finalize_removal(seeded)
    assert str(facts_file) in str(err.value) and "--abandon" in str(err.value)
    assert err.value.code == "archive_corrupt"
    with pytest.raises(archive.ArchiveIntegrityError):
        archive_due(seeded, USER, AS_OF, "run-2")
    assert snapshots(seeded) == before  # nothing left the live tables
    assert {m[3] for m in manifest(seeded)} == {"exported"}
    # the operator abandons the batch; the next run exports and finalizes the rows again
    archive.abandon_exports(seeded, [f["export_id"] for f in exported["files"]])
    counts = archive_due(seeded, USER, AS_OF, "run-3")
    assert counts["archived_facts"] == 5
    with db.open_store(seeded) as con:
        assert violations(con) == {}
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])
    assert parquet_ids(Path(seeded.archive_dir), "facts", USER) == sorted(DUE[(USER, "facts")])
    assert sorted(m[3] for m in manifest(seeded)) == ["abandoned"] * 3 + ["finalized"] * 3


def test_a_row_changed_after_export_stays_live(seeded) -> None:
    archive.export_removals(seeded, user_id=USER, as_of=AS_OF, run_id="r1")
    with db.open_store(seeded) as con:
        con.execute("update facts set status = 'active', last_updated = $t where id = 'f_rm'", {"t": AS_OF})
        con.execute("update episodes set status = 'active' where id = 'e_rm_legacy'")
    result = archive.finalize_removal(seeded, user_id=USER)
    assert result["rows"] == {"facts": 4, "fact_sources": 4, "episodes": 1}
    with db.open_store(seeded) as con:
        assert {"f_rm", "f_active"} <= live_ids(con, "facts", USER)
        assert "e_rm_legacy" in live_ids(con, "episodes", USER)
        assert con.execute("select count(*) from fact_sources where fact_id = 'f_rm'").fetchall() == [(2,)]
        assert violations(con) == {}


def test_export_skips_a_tenant_whose_exports_wait_for_finalize(seeded) -> None:
    first = archive.export_removals(seeded, user_id=USER, as_of=AS_OF, run_id="r1")
    assert len(first["files"]) == 3
    second = archive.export_removals(seeded, as_of=AS_OF, run_id="r2")
    assert list(second["skipped_tenants"]) == [USER]
    assert {f["user_id"] for f in second["files"]} == {OTHER}
    assert archive.finalize_removal(seeded)["batches"] == 2
    assert len(parquet_files(seeded)) == 6


def test_manifest_rows_json_entries_and_hive_layout(seeded) -> None:
    archive_due(seeded, None, AS_OF, "run-1")
    rows = archive.list_exports(seeded)
    assert {r["status"] for r in rows} == {"finalized"} and len(rows) == 6
    for r in rows:
        entry = json.loads((Path(seeded.archive_dir) / "_manifest" / f"{r['export_id']}.json").read_text())
        assert (entry["row_count"], entry["content_hash"], entry["run_id"]) == (r["row_count"], r["content_hash"], "run-1")
        assert r["finalized_rows"] == r["row_count"]
        assert r["path"].startswith(f"table={r['table_name']}/user_id=") and r["path"].endswith("/run-1-1.parquet")
    assert any("user_id=u%2F2%20odd/date=2026-03-01" in r["path"] for r in rows)
    glob = str(Path(seeded.archive_dir) / "**" / "*.parquet")
    with duckdb.connect() as mem:
        got = mem.execute("select \"table\", user_id, \"date\", count(*) from read_parquet($g, hive_partitioning = true,"
                          " union_by_name = true) group by all order by all", {"g": glob}).fetchall()
    assert got == [("episodes", OTHER, AS_OF.date(), 1), ("episodes", USER, AS_OF.date(), 2),
                   ("fact_sources", OTHER, AS_OF.date(), 1), ("fact_sources", USER, AS_OF.date(), 6),
                   ("facts", OTHER, AS_OF.date(), 1), ("facts", USER, AS_OF.date(), 5)]


def test_mark_removal_sets_status_with_audit_and_rejects_unknown_ids(seeded) -> None:
    now = datetime(2026, 3, 2)
    result = archive.mark_removal(seeded, USER, ["f_active", "f_rm"], now=now)
    assert (result["marked"], result["already_marked"]) == (1, 1)
    episodes = archive.mark_removal(seeded, USER, ["e1"], table="episodes", now=now)
    assert episodes["marked"] == 1
    with pytest.raises(InvalidInput, match="ids: not found"):
        archive.mark_removal(seeded, USER, ["e2", "nope"], table="episodes", now=now)
    with pytest.raises(InvalidInput, match="ids"):
        archive.mark_removal(seeded, USER, [" "])
    with db.open_store(seeded) as con:
        assert con.execute("select status, last_updated from facts where id = 'f_active'").fetchall() == [("removal", now)]
        assert con.execute("select status, status_changed_at from episodes where id in ('e1', 'e2') order by id"
                           ).fetchall() == [("removal", now), ("active", None)]
        assert con.execute("select action, status_before, status_after from fact_events where fact_id = 'f_active'"
                           ).fetchall() == [("retracted", "active", "removal")]
    # f_active is marked now, so it becomes due after retention; f_loser (pointing to it) goes with it
    due = archive.list_removal_candidates(seeded, user_id=USER, table="facts", as_of=now + timedelta(days=30),
                                          sample=100)
    assert {"f_active", "f_loser"} <= {s["id"] for s in due["sample"]}


def test_finalizing_one_export_finalizes_its_whole_batch(seeded) -> None:
    exported = archive.export_removals(seeded, user_id=USER, as_of=AS_OF, run_id="r1")
    facts_export = next(f["export_id"] for f in exported["files"] if f["table"] == "facts")
    result = archive.finalize_removal(seeded, export_ids=[facts_export])
    assert result["rows"] == {"facts": 5, "fact_sources": 6, "episodes": 2}
    with db.open_store(seeded) as con:
        assert violations(con) == {}
        assert con.execute("select count(*) from fact_sources where fact_id = 'f_rm'").fetchall() == [(0,)]


def test_restore_refuses_a_damaged_file_and_restores_nothing(seeded) -> None:
    archive_due(seeded, USER, AS_OF, "run-1")
    facts_file = next(Path(seeded.archive_dir).rglob("table=facts/**/*.parquet"))
    data = facts_file.read_bytes()
    facts_file.write_bytes(data[:-10] + bytes(10))  # same size, different bytes
    with pytest.raises(archive.ArchiveIntegrityError, match="sha256"):
        restore(seeded, USER)
    with db.open_store(seeded) as con:
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])
        assert archived_ids(con, "episodes", USER) == sorted(DUE[(USER, "episodes")])
    facts_file.write_bytes(data)
    assert restore(seeded, USER, ids=["f_rm"])["rows"] == {"episodes": 0, "facts": 1, "fact_sources": 2}
