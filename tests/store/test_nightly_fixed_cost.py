"""The nightly run's bookkeeping made cheaper keeps its meaning: stage records, skipped stages, the archive
step's short-circuit, and the store held across tenants."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from engram.consolidate import runner
from engram.consolidate.context import StageContext, StagePlan
from engram.embed.models import HashEmbedder
from engram.errors import StoreError
from engram.llm.usage import Usage, record_run_usage
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes
from engram.store.runs import (
    LeaseHeld,
    holder_id,
    record_stage,
    tenant_lease,
)

AS_OF = datetime(2026, 3, 1, 3, 0)
RUN = "run-cost"


def _runs(settings: Settings) -> list[tuple]:
    with db.open_store(settings) as con:
        return con.execute("select user_id, stage, status, counts, llm_calls, error from runs order by all").fetchall()


def _record(settings: Settings, stage: str, status: str, counts: dict, error: str | None = None) -> None:
    with db.open_store(settings) as con, db.transaction(con):
        record_stage(con, RUN, "u1", stage, AS_OF, AS_OF, counts, status=status, error=error)


def test_record_stage_replaces_the_row_and_keeps_its_llm_usage(settings) -> None:
    with db.open_store(settings) as con, db.transaction(con):
        record_run_usage(con, RUN, "u1", "resolve", Usage(requests=3, input_tokens=10, output_tokens=5), AS_OF)
    _record(settings, "resolve", "failed", {}, error="boom")
    _record(settings, "resolve", "completed", {"requests": 3})
    _record(settings, "merge", "completed", {"merges": 1})
    assert _runs(settings) == [("u1", "merge", "completed", json.dumps({"merges": 1}), 0, None),
                               ("u1", "resolve", "completed", json.dumps({"requests": 3}), 3, None)]


def _stub_stages(monkeypatch, called: list[str], fail: str | None = None) -> None:
    """Stages that record their call and return {"ran": 1}; `fail` raises instead."""
    def stage(name: str):
        def run(ctx, tools) -> StagePlan:
            called.append(name)
            if name == fail:
                raise ValueError("no")
            return StagePlan({"ran": 1})
        return run
    monkeypatch.setattr(runner, "REGISTRY", {name: stage(name) for name in runner.STAGES})


def test_run_tenant_skips_completed_stages_and_replaces_a_failed_row(settings, monkeypatch) -> None:
    _record(settings, "merge", "completed", {"merges": 2})
    _record(settings, "deprecate", "failed", {}, error="earlier attempt")
    called: list[str] = []
    _stub_stages(monkeypatch, called)
    out = runner.run_tenant(settings, "u1", RUN, AS_OF, ["merge", "deprecate"], runner.Tools(HashEmbedder(8)))
    assert called == ["deprecate"]
    assert {s: (r.status, r.counts.get("ran"), r.counts.get("merges")) for s, r in out.items()} == {
        "merge": ("skipped", None, 2), "deprecate": ("completed", 1, None)}
    assert [r[:3] + r[5:] for r in _runs(settings)] == [("u1", "deprecate", "completed", None),
                                                        ("u1", "merge", "completed", None)]


def test_every_stage_records_its_runs_row_and_a_failing_one_is_recorded_failed(settings, monkeypatch) -> None:
    called: list[str] = []
    _stub_stages(monkeypatch, called)
    runner.run_tenant(settings, "u1", RUN, AS_OF, tools=runner.Tools(HashEmbedder(8)))
    assert sorted(r[1] for r in _runs(settings) if r[2] == "completed") == sorted(runner.STAGES)
    _stub_stages(monkeypatch, called, fail="extract")
    with pytest.raises(ValueError):
        runner.run_tenant(settings, "u2", RUN, AS_OF, ["embed", "extract", "merge"], runner.Tools(HashEmbedder(8)))
    assert [r[1:3] + r[5:] for r in _runs(settings) if r[0] == "u2"] == [
        ("embed", "completed", None), ("extract", "failed", "ValueError: no")]


def _lease_to(settings: Settings, holder: str, expires_at: datetime) -> None:
    with db.open_store(settings) as con:
        con.execute("delete from run_leases")
        con.execute("insert into run_leases values ('u1', 'run-other', $h, $a, $e)",
                    {"h": holder, "a": expires_at - timedelta(hours=2), "e": expires_at})


def _leases(settings: Settings) -> list[tuple]:
    with db.open_store(settings) as con:
        return con.execute("select user_id, run_id, holder from run_leases").fetchall()


def test_the_lease_is_taken_in_one_statement_and_refused_to_a_second_holder(settings) -> None:
    with tenant_lease(settings, "u1", RUN):
        assert _leases(settings) == [("u1", RUN, holder_id())]
        with tenant_lease(settings, "u1", RUN):  # the same holder again (a retry in this process)
            pass
    assert _leases(settings) == []  # released
    live_elsewhere = "another-host:4242"
    _lease_to(settings, live_elsewhere, datetime.now() + timedelta(hours=1))
    with pytest.raises(LeaseHeld, match="another-host:4242 \\(run run-other\\)"), tenant_lease(settings, "u1", RUN):
        pytest.fail("ran under another holder's lease")
    assert _leases(settings) == [("u1", "run-other", live_elsewhere)]  # untouched


@pytest.mark.parametrize("holder, expires_in", [
    ("another-host:4242", timedelta(hours=-1)),  # expired
    (f"{socket.gethostname()}:999999999", timedelta(hours=1)),  # live lease, but its process on this host is gone
])
def test_an_expired_or_dead_holders_lease_is_taken_over(settings, holder: str, expires_in: timedelta) -> None:
    _lease_to(settings, holder, datetime.now() + expires_in)
    with tenant_lease(settings, "u1", RUN):
        assert _leases(settings) == [("u1", RUN, holder_id())]
    assert _leases(settings) == []


def test_a_tenant_with_nothing_due_skips_the_archive_work(settings) -> None:
    add_episodes([{"user_id": "u1", "content": "I moved to Porto last spring."}], settings)
    got = runner.run_stage(StageContext(settings, "u1", RUN, AS_OF), "archive", runner.Tools(HashEmbedder(8))).counts
    assert {k: v for k, v in got.items() if k != "seconds"} == {"exported_facts": 0, "exported_fact_sources": 0, "exported_episodes": 0, "archived_facts": 0,
                   "archived_fact_sources": 0, "archived_episodes": 0, "files": 0, "resumed_rows": 0}
    assert not Path(settings.archive_dir).exists()  # archive_due was not even asked to check the directory


OLD, NEW = AS_OF - timedelta(days=90), AS_OF
FACT = ("insert into facts (id, user_id, text, confidence, confidence_at, evidence_count, asserted_at, created_at,"
        " last_updated, last_reinforced_at, status, content_hash) values ('f1', $u, 't', 0.1, $at, 1, $at, $at, $at,"
        " $at, 'deprecated', 'h')")
EXPORT = ("insert into archive_exports (export_id, batch_id, run_id, user_id, table_name, partition_date, path,"
          " status, created_at) values ('x1', 'b', 'r', $u, 'facts', $at, 'p', $status, $at)")


@pytest.mark.parametrize(("row", "params", "expected"), [
    (FACT, {"u": "u1", "at": OLD}, True),
    (FACT, {"u": "u1", "at": NEW}, False),  # retired too recently
    (FACT, {"u": "u2", "at": OLD}, False),  # another tenant's
    (EXPORT, {"u": "u2", "at": OLD, "status": "writing"}, True),  # interrupted work of any tenant is abandoned
    (EXPORT, {"u": "u1", "at": OLD, "status": "exported"}, True),  # waits for finalize
    (EXPORT, {"u": "u2", "at": OLD, "status": "exported"}, False),
], ids=["due-fact", "recent-fact", "other-tenant-fact", "any-writing-export", "own-exported", "other-exported"])
def test_archive_has_work(con, settings, row: str, params: dict, expected: bool) -> None:
    con.execute(row, params)
    assert db.rows(con, "queries/archive/archive_has_work", user_id="u1", fact_statuses=["deprecated", "superseded"],
                   episode_statuses=["removal"], cutoff=AS_OF - timedelta(days=settings.retention_days)) == [(expected,)]


def _other_process_can_open(path: Path) -> bool:
    code = "import duckdb, sys\ntry:\n    duckdb.connect(sys.argv[1]).close(); print('ok')\nexcept duckdb.Error: print('locked')"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() == "ok"


def test_store_hold_spans_units_and_writes_are_durable(settings) -> None:
    with db.StoreHold(settings, max_s=0) as hold:
        for n in range(2):
            with db.open_store(settings) as con, db.transaction(con):  # inside the hold: the shared database
                record_stage(con, RUN, f"u{n}", "merge", AS_OF, AS_OF, {})
            hold.renew()  # max_s=0: closed (checkpointed) and reopened
        assert not _other_process_can_open(settings.db_path)
    assert _other_process_can_open(settings.db_path)
    assert [r[:2] for r in _runs(settings)] == [("u0", "merge"), ("u1", "merge")]


def test_after_the_hold_a_removed_store_is_not_recreated(settings) -> None:
    with db.StoreHold(settings, max_s=5):
        with db.open_store(settings):
            pass
    Path(settings.db_path).unlink()
    with pytest.raises(StoreError):
        with db.open_store(settings):
            pass


def test_a_store_that_cannot_be_held_only_loses_the_hold(settings) -> None:
    blocker = Path(settings.db_path).parent / "not-a-dir"
    blocker.write_text("a file where the store's folder must go")
    unopenable = settings.model_copy(update={"db_path": blocker / "engram.duckdb"})
    with db.StoreHold(unopenable, max_s=0) as hold:  # no error: each unit opens (and fails on) its own
        hold.renew(force=True)
        with pytest.raises(OSError):
            with db.open_store(unopenable):
                pass
