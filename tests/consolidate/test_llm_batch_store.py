"""Batch mode against a local Gemini Batch API server: stored jobs, items and cases; apply once; re-queue; kills."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engram.consolidate.batch import collect_batches, submit_batch
from engram.consolidate.resolve import list_reviews
from engram.llm.base import BATCH_PRICE_FACTOR
from engram.llm.gemini import GeminiBatch, estimate_cost
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.crash import CRASH_ENV
from tests.gemini_batch_mock import MockBatchServer, rules
from tests.llm_seed import NOW, add_facts, contradiction, facts_of, merge_case, review

ROOT = Path(__file__).resolve().parents[2]
OLD, NEW = NOW - timedelta(days=30), NOW - timedelta(days=2)
LATER = NOW + timedelta(hours=6)


@pytest.fixture
def mock() -> Iterator[MockBatchServer]:
    server = MockBatchServer()
    yield server
    server.close()


@pytest.fixture
def batch_settings(settings: Settings, mock: MockBatchServer, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for key, value in {"ENGRAM_LLM": "gemini", "ENGRAM_GEMINI_API_KEY": "test-key", "ENGRAM_GEMINI_BASE_URL": mock.url,
                       "ENGRAM_LLM_MODE": "batch", "ENGRAM_LLM_RETRIES": "0", "ENGRAM_LLM_BATCH_RESUBMITS": "1"}.items():
        monkeypatch.setenv(key, value)
    return load_settings()


@pytest.fixture
def cases(batch_settings: Settings) -> dict[str, str]:
    """alice: a contradiction and a merge case; bob: a contradiction. Review ids by name."""
    with db.open_store(batch_settings) as con:
        for user, name in (("alice", "Alice"), ("bob", "Bob")):
            add_facts(con, user, [
                {"id": "f_a", "text": f"{name} drinks coffee every morning", "confidence": 0.8, "asserted_at": OLD},
                {"id": "f_b", "text": f"{name} stopped drinking coffee", "confidence": 0.6, "asserted_at": NEW},
            ])
        add_facts(con, "alice", [{"id": "f_c", "text": "Alice lives in Berlin", "confidence": 0.5},
                                 {"id": "f_d", "text": "Alice has lived in Berlin for years", "confidence": 0.5}])
        return {"alice_c": contradiction(con, "alice", "f_a", "f_b"), "bob_c": contradiction(con, "bob", "f_a", "f_b"),
                "alice_m": merge_case(con, "alice", ["f_c", "f_d"])}


def client(s: Settings) -> GeminiBatch:
    return GeminiBatch(s, backoff_s=0.01)


def rows(s: Settings, query: str) -> list[tuple]:
    with db.open_store(s) as con:
        return con.execute(query).fetchall()


def snapshot(s: Settings) -> dict[str, list]:
    return {t: rows(s, f"select * exclude (embedding) from {t} order by all" if t == "facts"  # noqa: S608
                    else f"select * from {t} order by all")  # noqa: S608
            for t in ("facts", "fact_events", "fact_sources", "llm_reviews", "llm_batch_jobs", "llm_batch_items", "runs")}


def test_submit_records_one_job_with_one_tenant_per_item(batch_settings: Settings, cases: dict[str, str],
                                                         mock: MockBatchServer) -> None:
    counts = submit_batch(batch_settings, client(batch_settings), "run-1", NOW)
    assert (counts["jobs_submitted"], counts["tenants"], counts["items"], counts["cases"]) == (1, 2, 3, 3)
    assert len(mock.jobs) == 1
    items = rows(batch_settings, "select item_key, user_id, kind, review_ids, status from llm_batch_items order by item_key")
    assert [(u, k, len(r), st) for _, u, k, r, st in items] == [
        ("alice", "contradiction", 1, "submitted"), ("alice", "merge", 1, "submitted"),
        ("bob", "contradiction", 1, "submitted")]
    # never two tenants in one prompt: each item's prompt holds its own tenant's facts only
    by_key = dict(mock.prompts())
    for key, user, *_ in items:
        other = "Bob" if user == "alice" else "Alice"
        assert other not in by_key[key] and user.capitalize() in by_key[key]
    assert rows(batch_settings, "select user_id, state, items from llm_batch_jobs order by user_id") == [
        ("alice", "submitted", 2), ("bob", "submitted", 1)]
    assert {r[0] for r in rows(batch_settings, "select status from llm_reviews")} == {"submitted"}
    # store ids never leave the process, and nothing is pending any more: a second submit sends nothing
    assert not any("f_a" in p or "rv_" in p for p in by_key.values())
    assert submit_batch(batch_settings, client(batch_settings), "run-1", NOW)["jobs_submitted"] == 0
    assert len(mock.jobs) == 1


@pytest.mark.slow
def test_collect_waits_then_applies_valid_replies_and_requeues_the_rest(
        batch_settings: Settings, cases: dict[str, str], mock: MockBatchServer) -> None:
    def answer(prompt: str, schema: str) -> str | dict[str, Any]:
        if schema == "MergeReply":   # valid JSON, but a case the request never held
            return json.dumps({"decisions": [{"case": "c9", "action": "keep_both", "reason": "x"}]})
        if "Bob" in prompt:          # not JSON at all
            return '{"decisions": [{"case": "c1", "act'
        return rules(prompt, schema)

    mock.answer = answer
    submit_batch(batch_settings, client(batch_settings), "run-1", NOW)
    before = snapshot(batch_settings)
    waiting = collect_batches(batch_settings, client(batch_settings), "run-2", LATER)  # RUNNING
    assert waiting["jobs_waiting"] == 1 and waiting["cases_applied"] == 0
    after_wait = snapshot(batch_settings)
    assert after_wait["facts"] == before["facts"] and after_wait["llm_reviews"] == before["llm_reviews"]
    assert rows(batch_settings, "select distinct state, provider_state from llm_batch_jobs") == [
        ("submitted", "JOB_STATE_RUNNING")]

    done = collect_batches(batch_settings, client(batch_settings), "run-2", LATER)  # SUCCEEDED
    assert (done["jobs_collected"], done["items_applied"], done["items_failed"]) == (1, 1, 2)
    assert (done["cases_applied"], done["cases_requeued"]) == (1, 2)
    with db.open_store(batch_settings) as con:
        assert facts_of(con, "alice")["f_a"][1] == "superseded"       # keep_b applied
        assert facts_of(con, "bob")["f_a"][1] == "active"             # bob's invalid reply applied nothing
        alice_c, alice_m, bob_c = (review(con, cases[k]) for k in ("alice_c", "alice_m", "bob_c"))
    assert alice_c["status"] == "applied" and json.loads(alice_c["decision"])["action"] == "keep_b"
    assert alice_c["cost_usd"] == pytest.approx(
        estimate_cost("gemini-2.5-flash", alice_c["input_tokens"], alice_c["output_tokens"]) * BATCH_PRICE_FACTOR)
    assert alice_c["input_tokens"] > 0
    assert (alice_m["status"], alice_m["attempts"]) == ("pending", 1) and "'c9' was not in the request" in alice_m["error"]
    assert (bob_c["status"], bob_c["attempts"]) == ("pending", 1) and "LLMBadReply" in bob_c["error"]
    assert rows(batch_settings, "select user_id, status from llm_batch_items order by item_key") == [
        ("alice", "applied"), ("alice", "rejected"), ("bob", "rejected")]
    assert rows(batch_settings, "select distinct state from llm_batch_jobs") == [("collected",)]
    spent = rows(batch_settings, "select user_id, llm_calls, cost_usd from runs where stage = 'llm_batch' order by 1")
    assert [(u, n) for u, n, _ in spent] == [("alice", 2), ("bob", 1)] and spent[0][2] > 0

    # applying twice changes nothing
    once = snapshot(batch_settings)
    again = collect_batches(batch_settings, client(batch_settings), "run-3", LATER)
    assert again["jobs_open"] == 0 and snapshot(batch_settings) == once
    # the re-queued cases (only those) go into the next job
    assert submit_batch(batch_settings, client(batch_settings), "run-3", LATER)["cases"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["EXPIRED", "CANCELLED", "FAILED", "forgotten"])
def test_lost_job_is_resubmitted_then_its_cases_go_to_review(
        batch_settings: Settings, cases: dict[str, str], mock: MockBatchServer, ending: str) -> None:
    # ENGRAM_LLM_BATCH_RESUBMITS=1: one re-submission, then the cases are failed with the reason
    mock.states = ["PENDING", ending if ending != "forgotten" else "RUNNING"]
    for run in ("run-1", "run-2"):
        submit_batch(batch_settings, client(batch_settings), run, NOW)
        if ending == "forgotten":
            mock.jobs.clear()
        counts = collect_batches(batch_settings, client(batch_settings), run + "-collect", NOW)
        assert counts["jobs_lost"] == 1 and counts["cases_applied"] == 0
    statuses = rows(batch_settings, "select status, resubmits from llm_reviews order by id")
    assert statuses == [("failed", 2)] * 3
    failed = list_reviews(batch_settings, status="failed")
    assert {r["id"] for r in failed} == set(cases.values())
    reason = "not_found" if ending == "forgotten" else ending.lower()
    assert all(f"batch job {reason}" in r["error"] and "decide it by hand" in r["error"] for r in failed)
    assert rows(batch_settings, "select distinct state from llm_batch_jobs") == [("lost",)]
    assert {r[0] for r in rows(batch_settings, "select status from facts")} == {"active"}  # nothing applied
    assert submit_batch(batch_settings, client(batch_settings), "run-3", NOW)["jobs_submitted"] == 0


SUBMIT = ("from engram.consolidate.batch import submit_batch; from engram.llm.gemini import GeminiBatch;"
          "from engram.settings import load_settings; from tests.llm_seed import NOW; s = load_settings();"
          "submit_batch(s, GeminiBatch(s), 'run-1', NOW)")
COLLECT = ("from engram.consolidate.batch import collect_batches; from engram.llm.gemini import GeminiBatch;"
           "from engram.settings import load_settings; from tests.llm_seed import NOW; s = load_settings();"
           "collect_batches(s, GeminiBatch(s), 'run-2', NOW)")


def killed_at(step: str, code: str) -> int:
    env = {**os.environ, CRASH_ENV: step, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=120, check=False).returncode


@pytest.mark.slow
def test_kills_between_submit_and_collect_lose_nothing_and_apply_once(
        batch_settings: Settings, cases: dict[str, str], mock: MockBatchServer) -> None:
    mock.states = ["SUCCEEDED"]
    # killed after the provider accepted the job, before the store recorded it: the cases stay pending
    assert killed_at("batch:after_submit", SUBMIT) == -9
    assert len(mock.jobs) == 1
    assert {r[0] for r in rows(batch_settings, "select status from llm_reviews")} == {"pending"}
    assert rows(batch_settings, "select count(*) from llm_batch_jobs") == [(0,)]
    # the next run sends them again (the orphaned job is never collected)
    submit_batch(batch_settings, client(batch_settings), "run-1", NOW)
    assert len(mock.jobs) == 2
    # a collection killed inside its write transaction applies nothing
    assert killed_at("collect:mid_write", COLLECT) == -9
    assert {r[0] for r in rows(batch_settings, "select status from llm_reviews")} == {"submitted"}
    assert rows(batch_settings, "select count(*) from fact_events where run_id = 'run-2'") == [(0,)]
    # collected by another process: every case applied exactly once
    counts = collect_batches(batch_settings, client(batch_settings), "run-2", NOW)
    assert counts["cases_applied"] == 3
    assert {r[0] for r in rows(batch_settings, "select status from llm_reviews")} == {"applied"}
    events = rows(batch_settings, "select user_id, fact_id, action, count(*) from fact_events"
                                  " where run_id = 'run-2' group by all order by all")
    assert all(n == 1 for *_, n in events) and len(events) >= 5
    assert collect_batches(batch_settings, client(batch_settings), "run-3", NOW)["jobs_open"] == 0


def test_checks_pass_after_submit_and_collect_and_catch_a_foreign_review(
        batch_settings: Settings, cases: dict[str, str]) -> None:
    from engram.store.checks import run_checks

    submit_batch(batch_settings, client(batch_settings), "run-1", NOW)
    with db.open_store(batch_settings) as con:
        assert run_checks(con)["batch_items_within_tenant"] == 0
        con.execute("update llm_batch_items set review_ids = list_append(review_ids, $r) where user_id = 'alice'",
                    {"r": cases["bob_c"]})
        assert run_checks(con)["batch_items_within_tenant"] == 2
