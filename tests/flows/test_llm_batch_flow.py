"""Batch mode in the nightly flow: a run submits one job and finishes; the collect flow applies it once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engram.consolidate.report import run_report_markdown
from engram.flows.collect import llm_batch_collection
from engram.flows.nightly import nightly_consolidation
from engram.settings import Settings
from engram.store import db
from tests.flows.test_resolve_flow import seed
from tests.llm_seed import NOW, facts_of


def test_run_submits_then_collect_flow_applies_once(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_LLM", "fake")
    monkeypatch.setenv("ENGRAM_LLM_MODE", "batch")
    seed(settings)  # a contradiction and a merge case of alice
    first = nightly_consolidation(user_id="alice", as_of=NOW, stages=["resolve"])
    assert first["tenants"]["alice"]["resolve"]["mode"] == "batch"
    sent = first["llm_batch"]["submit"]
    assert (sent["jobs_submitted"], sent["items"], sent["cases"]) == (1, 2, 2)
    report = run_report_markdown(first["run_id"], NOW, False, first["tenants"], first["llm_batch"])
    assert "jobs_submitted 1" in report and "items 2" in report
    with db.open_store(settings) as con:
        assert facts_of(con, "alice")["f_old"][1] == "active"  # nothing decided while the job runs
        assert {r[0] for r in con.execute("select status from llm_reviews").fetchall()} == {"submitted"}

    got = llm_batch_collection(as_of=NOW + timedelta(hours=1))["collect"]
    assert (got["jobs_collected"], got["cases_applied"], got["items_failed"]) == (1, 2, 0)
    with db.open_store(settings) as con:
        assert facts_of(con, "alice")["f_old"][1] == "superseded"
        applied = con.execute("select count(*) from fact_events where reason like '%(rv_%'").fetchall()
    # the next night finds the job collected: nothing applied twice, nothing sent again
    second = nightly_consolidation(user_id="alice", as_of=NOW + timedelta(days=1), stages=["resolve"])
    assert second["llm_batch"]["collect"]["jobs_open"] == 0 and second["llm_batch"]["submit"]["jobs_submitted"] == 0
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from fact_events where reason like '%(rv_%'").fetchall() == applied
