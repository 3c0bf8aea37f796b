"""The resolve stage inside the nightly flow, with the rule-based fake LLM: applied rows and audit rows."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from engram.flows.nightly import nightly_consolidation
from engram.llm import fake_rules as llm_fake_rules
from engram.settings import Settings
from engram.store import db
from tests.llm_seed import NOW, add_facts, contradiction, facts_of, merge_case, review

U = "alice"


def seed(settings: Settings) -> tuple[str, str]:
    """A contradiction (older 'drinks coffee' vs newer 'stopped') and an ambiguous 3-fact merge."""
    with db.open_store(settings) as con:
        add_facts(con, U, [
            {"id": "f_old", "text": "Alice drinks coffee every morning", "confidence": 0.8,
             "asserted_at": NOW - timedelta(days=30)},
            {"id": "f_new", "text": "Alice stopped drinking coffee", "confidence": 0.6,
             "asserted_at": NOW - timedelta(days=1)},
            {"id": "m1", "text": "Alice lives in Berlin", "confidence": 0.5, "evidence_count": 2},
            {"id": "m2", "text": "Alice is living in Berlin now", "confidence": 0.55, "evidence_count": 3},
            {"id": "m3", "text": "Alice's home is Berlin", "confidence": 0.4},
        ])
        add_facts(con, "bob", [{"id": "b1", "text": "Bob lives in Rome"}])
        return contradiction(con, U, "f_old", "f_new"), merge_case(con, U, ["m1", "m2", "m3"])


def everything(con: db.Connection) -> dict[str, Any]:
    return {t: con.execute(f"select * exclude (embedding) from {t} order by all").fetchall()  # noqa: S608
            if t == "facts" else con.execute(f"select * from {t} order by all").fetchall()  # noqa: S608
            for t in ("facts", "fact_events", "fact_sources")}


def test_flow_resolves_a_contradiction_and_a_merge(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_LLM", "fake")
    contra_id, merge_id = seed(settings)
    result = nightly_consolidation(user_id=U, as_of=NOW, stages=["resolve"])
    counts = result["tenants"][U]["resolve"]
    assert counts["requests"] == 2 and counts["applied"] == 2 and counts["failed"] == 0
    run_id = result["run_id"]
    with db.open_store(settings) as con:
        facts = facts_of(con, U)
        assert facts["f_old"][1:] == ("superseded", None, NOW)
        assert facts["f_new"][:2] == (pytest.approx(0.6), "active")       # penalty undone
        assert facts["m1"][1:3] == ("merged_into", "m2") and facts["m3"][1:3] == ("merged_into", "m2")
        assert facts["m2"][1] == "active"
        assert facts_of(con, "bob")["b1"][1] == "active"
        audit = con.execute("select fact_id, action, related_fact_id from fact_events where run_id = $r"
                            " order by fact_id", {"r": run_id}).fetchall()
        assert audit == [("f_new", "resolved", "f_old"), ("f_old", "superseded", "f_new"),
                         ("m1", "merged", "m2"), ("m2", "merged", None), ("m3", "merged", "m2")]
        for rid, action in ((contra_id, "keep_a"), (merge_id, "merge")):  # a = f_new (ids sorted)
            row = review(con, rid)
            assert row["status"] == "applied" and row["decided_by"] == "fake-llm"
            assert json.loads(row["decision"])["action"] == action and len(row["prompt_hash"]) == 64
        runs = con.execute("select status, llm_calls, input_tokens, output_tokens from runs"
                           " where run_id = $r and user_id = $u and stage = 'resolve'", {"r": run_id, "u": U}).fetchall()
        assert runs == [("completed", 2, counts["input_tokens"], counts["output_tokens"])]
        per_review = con.execute("select sum(input_tokens) from llm_reviews where user_id = $u", {"u": U}).fetchall()
        assert per_review == [(counts["input_tokens"],)]
        before = everything(con)
    # a second night finds nothing pending and changes nothing
    again = nightly_consolidation(user_id=U, as_of=NOW + timedelta(hours=1), stages=["resolve"])
    assert again["tenants"][U]["resolve"]["requests"] == 0
    with db.open_store(settings) as con:
        assert everything(con) == before


def test_flow_with_an_invalid_reply_applies_nothing(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_LLM", "fake")
    monkeypatch.setitem(llm_fake_rules.RULES, "ContradictionReply",
                        lambda records: {"decisions": [{"case": "c42", "action": "keep_a", "reason": "x"}]})
    monkeypatch.setitem(llm_fake_rules.RULES, "MergeReply",
                        lambda records: {"decisions": [{"case": "c1", "action": "merge", "winner": "m2", "reason": "x"}]})
    contra_id, merge_id = seed(settings)
    with db.open_store(settings) as con:
        before = everything(con)
    result = nightly_consolidation(user_id=U, as_of=NOW, stages=["resolve"])
    counts = result["tenants"][U]["resolve"]
    assert counts["requests"] == 2 and counts["applied"] == 0 and counts["failed"] == 2
    with db.open_store(settings) as con:
        assert everything(con) == before
        for rid, needle in ((contra_id, "c42"), (merge_id, "winner")):
            row = review(con, rid)
            assert row["status"] == "pending" and row["attempts"] == 1 and needle in row["error"]
            assert row["decision"] is None
