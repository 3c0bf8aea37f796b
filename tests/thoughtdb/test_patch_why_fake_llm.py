"""ENGRAM_LLM=fake takes why's LLM path: the fake's SupportPick rule answers with a valid support set."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from engram import llm as llms
from engram.llm.fake import FakeLLM
from engram.llm.fake_rules import rule_based_responder
from engram.llm.prompt_quote import data_block
from engram.settings import load_settings
from engram.thoughtdb import why
from tests.thought_seed import claim, edge, episode

U = "alice"
NOW = datetime(2026, 3, 1)


@pytest.fixture
def graph(con):
    """start depends_on a; a <-> b (a cycle); x supports start; y supports start and depends_on a."""
    for ep in ("e1", "e2", "e3"):
        episode(con, U, ep, f"episode {ep}")
    claim(con, U, "start", "We should ship on Friday")
    claim(con, U, "a", "Tests are green", sources=["e1"], confidence=0.9)
    claim(con, U, "b", "CI runs every test", sources=["e2"], confidence=0.7)
    claim(con, U, "x", "The release notes are written", sources=["e3"], confidence=0.6)
    edge(con, U, "depends_on", "start", "a")
    edge(con, U, "depends_on", "a", "b")
    edge(con, U, "depends_on", "b", "a")
    edge(con, U, "supports", "x", "start")
    return con


def test_rule_covers_every_coverable_path() -> None:
    records = [{"claim_id": c, "text": c, "confidence": w} for c, w in (("a", 0.9), ("b", 0.5), ("c", 0.4))]
    records += [{"path": i, "claim_ids": p} for i, p in enumerate([["a", "b"], ["b", "c"], ["c"], []])]
    reply = json.loads(rule_based_responder("pick\n" + data_block(records), why.SupportPick))
    assert reply == {"claim_ids": ["b", "c"]}  # b lies on two paths; the empty path is skipped


def test_fake_from_settings_takes_the_llm_path(graph, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_LLM", "fake")
    model = llms.from_settings(load_settings())
    assert isinstance(model, FakeLLM)
    r = why.trace(graph, U, "claim", "start", as_of=NOW, llm=model)
    assert r["picked_by"] == "llm:fake-llm"
    assert sorted(r["support_set"]) == ["a", "x"]
    assert [name for name, _ in model.calls] == ["SupportPick"]
    rule = why.trace(graph, U, "claim", "start", as_of=NOW)  # no LLM: the deterministic rule
    assert rule["picked_by"] == "rule" and sorted(rule["support_set"]) == ["a", "x"]


def test_fake_answer_is_checked_like_a_real_one(graph) -> None:
    # the fake's reply goes through why's validation: a rule that drops a path is refused
    calls: list[str] = []

    def partial(prompt: str, schema: type) -> str:
        calls.append(schema.__name__)
        full = json.loads(rule_based_responder(prompt, schema))
        return json.dumps({"claim_ids": full["claim_ids"][:1]})

    r = why.trace(graph, U, "claim", "start", as_of=NOW, llm=FakeLLM(partial))
    assert calls == ["SupportPick"] and r["picked_by"] == "rule"
