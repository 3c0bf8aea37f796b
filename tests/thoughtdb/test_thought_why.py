"""why-tracing: reverse walk with budgets, validity at as_of, cycles collapsed, minimal support set, save."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from engram.errors import InvalidInput
from engram.llm.fake import FakeLLM
from engram.thoughtdb import claims, why
from tests.thought_seed import claim, edge, episode

U = "alice"
EXPIRY = datetime(2026, 2, 1)
NOW = datetime(2026, 3, 1)
BEFORE = datetime(2026, 1, 15)


@pytest.fixture
def graph(con):
    """start depends_on a; a <-> b (a cycle); x supports start; start derived_from an expired claim."""
    for ep in ("e1", "e2", "e3"):
        episode(con, U, ep, f"episode {ep}")
    claim(con, U, "start", "We should ship on Friday")
    claim(con, U, "a", "Tests are green", sources=["e1"], confidence=0.9)
    claim(con, U, "b", "CI runs every test", sources=["e2"], confidence=0.7)
    claim(con, U, "x", "The release notes are written", sources=["e3"], confidence=0.6)
    claim(con, U, "old", "Friday is a holiday", sources=["e3"], confidence=0.95, valid_to=EXPIRY)
    edge(con, U, "depends_on", "start", "a")
    edge(con, U, "depends_on", "a", "b")
    edge(con, U, "depends_on", "b", "a")
    edge(con, U, "supports", "x", "start")
    edge(con, U, "derived_from", "start", "old")
    edge(con, U, "contradicts", "start", "e1")  # not a support edge: ignored
    edge(con, U, "depends_on", "start", "gone", status="retracted")  # inactive: ignored
    return con


def _ids(result: dict) -> set[str]:
    return {n["id"] for n in result["nodes"]}


def test_trace_with_cycle_and_expired_claim(graph) -> None:
    r = why.trace(graph, U, "claim", "start", as_of=NOW)
    assert _ids(r) == {"start", "a", "b", "x", "e1", "e2", "e3"}
    assert r["filtered"] == [{"id": "old", "reason": "expired"}]
    assert len(r["clusters"]) == 1 and sorted(r["clusters"][0]["members"]) == ["a", "b"]
    by_id = {n["id"]: n for n in r["nodes"]}
    assert by_id["a"]["cluster"] == by_id["b"]["cluster"] is not None and by_id["x"]["cluster"] is None
    assert sorted(r["sources"]) == ["e1", "e2", "e3"]
    assert r["paths"] == 3 and r["uncovered_paths"] == 0
    assert r["support_set"] == ["a", "x"] and r["picked_by"] == "rule"
    assert {"from": "x", "to": "start", "via": "supports"} not in r["edges"]
    assert {"from": "start", "to": "x", "via": "supports"} in r["edges"]
    assert {"from": "a", "to": "e1", "via": "source:extracted_from"} in r["edges"]
    assert r["truncated"] is False and r["start_filtered"] is None
    assert why.trace(graph, U, "claim", "old", as_of=NOW)["start_filtered"] == "expired"


def test_expired_claim_included_before_its_expiry(graph) -> None:
    r = why.trace(graph, U, "claim", "start", as_of=BEFORE)
    assert "old" in _ids(r) and r["filtered"] == []
    assert r["paths"] == 4
    assert r["support_set"][0] == "a" and set(r["support_set"]) == {"a", "x", "old"}


def test_budgets_truncate(graph) -> None:
    r = why.trace(graph, U, "claim", "start", as_of=NOW, depth=1)
    assert _ids(r) == {"start", "a", "x"} and r["truncated"] is True
    r = why.trace(graph, U, "claim", "start", as_of=NOW, max_nodes=2)
    assert len(r["nodes"]) == 2 and r["truncated"] is True
    r = why.trace(graph, U, "claim", "start", as_of=NOW, depth=0)
    assert _ids(r) == {"start"} and r["truncated"] is True and r["support_set"] == []


def test_retracted_and_redirected_claims(graph) -> None:
    claim(graph, U, "a_dup", "Tests pass", confidence=0.5)
    claims.same_as(graph, U, "a_dup", "a", now=NOW)
    claim(graph, U, "start2", "Ship it")
    edge(graph, U, "depends_on", "start2", "a_dup")
    r = why.trace(graph, U, "claim", "start2", as_of=NOW)
    assert "a_dup" not in _ids(r) and {"a", "b"} <= _ids(r)  # the duplicate reads as its canonical claim
    claims.retract_claim(graph, U, "x", now=datetime(2026, 2, 15))
    r = why.trace(graph, U, "claim", "start", as_of=NOW)
    assert {"id": "x", "reason": "retracted"} in r["filtered"] and r["support_set"] == ["a"]
    assert "x" in _ids(why.trace(graph, U, "claim", "start", as_of=datetime(2026, 2, 10)))  # before retraction
    # why on a duplicate starts from the canonical claim
    assert why.trace(graph, U, "claim", "a_dup", as_of=NOW)["start_id"] == "a"


def test_private_sources_filtered_unless_asked(graph) -> None:
    graph.execute("update episodes set is_private = true where id = 'e2'")
    r = why.trace(graph, U, "claim", "start", as_of=NOW)
    assert "e2" not in _ids(r) and {"id": "e2", "reason": "private"} in r["filtered"]
    assert "e2" in _ids(why.trace(graph, U, "claim", "start", as_of=NOW, include_private=True))


def test_start_checks(graph) -> None:
    with pytest.raises(InvalidInput, match="id: 'e1' is a record of kind event, not a claim"):
        why.trace(graph, U, "claim", "e1")
    with pytest.raises(InvalidInput, match="id: 'start' is unknown"):
        why.trace(graph, "bob", "claim", "start")
    with pytest.raises(InvalidInput, match="as_of"):
        why.trace(graph, U, "claim", "start", as_of="yesterday")
    with pytest.raises(InvalidInput, match="depth"):
        why.trace(graph, U, "claim", "start", depth=-1)


def test_event_and_uncovered_paths(graph) -> None:
    episode(graph, U, "ev_deploy", "deployed v2", kind="event")
    edge(graph, U, "derived_from", "ev_deploy", "e1")  # a path with no claim on it
    edge(graph, U, "derived_from", "ev_deploy", "start")
    r = why.trace(graph, U, "event", "ev_deploy", as_of=NOW)
    assert r["uncovered_paths"] == 1
    assert "start" in r["support_set"]  # a claim on the other paths (start is not the start here)


def test_llm_pick_used_when_valid_else_rule(graph) -> None:
    good = FakeLLM(lambda prompt, schema: json.dumps({"claim_ids": ["b", "x"]}))
    r = why.trace(graph, U, "claim", "start", as_of=NOW, llm=good)
    assert r["support_set"] == ["b", "x"] and r["picked_by"] == "llm:fake-llm" and len(good.calls) == 1
    for answer in ({"claim_ids": ["b"]}, {"claim_ids": ["b", "x", "nope"]}, {"wrong": 1}):
        bad = FakeLLM(lambda prompt, schema, a=answer: json.dumps(a))
        r = why.trace(graph, U, "claim", "start", as_of=NOW, llm=bad)
        assert r["support_set"] == ["a", "x"] and r["picked_by"] == "rule"

    def no_rule(prompt: str, schema: type) -> str:
        raise ValueError("schema: no rule")

    r = why.trace(graph, U, "claim", "start", as_of=NOW, llm=FakeLLM(no_rule))
    assert r["picked_by"] == "rule"


def test_save_as_summary_node(graph) -> None:
    r = why.trace(graph, U, "claim", "start", as_of=NOW)
    node_id = why.save_trace(graph, U, r, now=NOW)
    row = graph.execute("select node_type, status, source_refs, body from nodes where user_id = ? and id = ?",
                        [U, node_id]).fetchall()[0]
    assert row[0] == "Summary" and row[1] == "active" and row[2] == ["e1", "e2", "e3"]
    assert "a: Tests are green" in row[3]
    derived = graph.execute("select to_id from edges where user_id = ? and from_id = ? and edge_type = "
                            "'derived_from' order by to_id", [U, node_id]).fetchall()
    assert derived == [("a",), ("start",), ("x",)]
    assert why.save_trace(graph, U, r, now=NOW) == node_id  # saving again adds nothing
    assert graph.execute("select count(*) from nodes").fetchall() == [(1,)]
    # the summary itself can be traced back to the same support
    again = why.trace(graph, U, "node", node_id, as_of=NOW)
    assert {"start", "a", "x"} <= _ids(again)
