"""The query commands end to end through the CLI: search, retrieve, inner-voice, ask, context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.index.vector_index import CACHE

runner = CliRunner()

ROWS = [
    {"user_id": "alice", "content": "I adopted a grey cat named Milo", "created_at": "2024-01-01T10:00:00Z",
     "kind": "thought", "origin": "model"},
    {"user_id": "alice", "content": "Milo the cat loves tuna and naps", "created_at": "2024-01-02T10:00:00Z",
     "kind": "thought", "origin": "model"},
    {"user_id": "alice", "content": "The tax return is due in April", "created_at": "2024-01-03T10:00:00Z"},
    {"user_id": "bob", "content": "Bob has a cat named Milo too", "created_at": "2024-01-03T10:00:00Z"},
]


@pytest.fixture
def store(settings, tmp_path: Path):
    CACHE.clear()
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert runner.invoke(app, ["ingest", str(path)]).exit_code == 0
    assert runner.invoke(app, ["embed"]).exit_code == 0
    yield settings
    CACHE.clear()


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_search_json_is_tenant_scoped(store):
    code, out, _ = invoke("search", "cat named Milo", "--user", "alice", "--json")
    assert code == 0
    reply = json.loads(out)
    hits = reply["results"]
    assert reply["tokens"] <= reply["max_tokens"] == 1500 and reply["count"] == len(hits)
    assert hits and all(h["id"].startswith("ep_") for h in hits)
    assert "Milo" in hits[0]["text"]
    assert not any("Bob" in h["text"] for h in hits)
    code, out, _ = invoke("search", "cat named Milo", "--user", "alice", "--method", "lexical", "-k", "1")
    lines = out.strip().splitlines()
    assert code == 0 and "Milo" in lines[0] and lines[1:] in ([], ["(1 more matching memory not shown)"])


def test_search_bad_input_is_a_typed_error(store):
    code, _, err = invoke("search", "cat", "--user", "alice", "--type", "nodes")
    assert code == 2 and "invalid_params" in err and "search_type" in err


def test_retrieve_gate_and_json(store, monkeypatch):
    code, _, err = invoke("retrieve", "Milo", "--user", "alice")
    assert code == 2 and "feature_disabled" in err
    monkeypatch.setenv("ENGRAM_ENABLE_INNER_VOICE", "true")
    code, out, _ = invoke("retrieve", "cat named Milo", "--user", "alice", "--floor", "0", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["diagnostics"]["k_ret"] == len(body["snippets"]) >= 2
    assert {s["source_type"] for s in body["snippets"]} == {"thought"}


def test_inner_voice_saves_a_summary(store, monkeypatch):
    monkeypatch.setenv("ENGRAM_ENABLE_INNER_VOICE", "true")
    code, out, _ = invoke("inner-voice", "cat named Milo", "--user", "alice", "--sim-thresh", "0.2", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["saved_thought_id"] and len(body["sources"]) == 2
    code, out, _ = invoke("search", "Milo", "--user", "alice", "--json", "-k", "10")
    assert body["saved_thought_id"] in {h["id"] for h in json.loads(out)["results"]}


def test_ask_refuses_without_llm(store):
    code, _, err = invoke("ask", "What is the cat called?", "--user", "alice")
    assert code == 2 and "feature_disabled" in err and "ENGRAM_LLM" in err


def test_context_respects_the_budget(store):
    code, out, _ = invoke("context", "--user", "alice", "-m", "hello", "-m", "how is Milo the cat?",
                          "--tool-result", "weather: sunny", "--budget", "40", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["total_tokens"] <= 40
    assert body["sections"]["messages"][-1] == "how is Milo the cat?"
    assert body["sections"]["tool_results"] == ["weather: sunny"]


def test_search_shows_one_readable_line_per_memory_and_explains_its_relevance(store):
    code, out, _ = invoke("search", "grey cat named Milo", "--user", "alice", "--explain")
    assert code == 0
    first, second = out.splitlines()[:2]
    assert first.startswith("1 January 2024  thought  I adopted a grey cat named Milo  [ep_")
    relevance = float(second.split()[1])
    assert 0.0 <= relevance <= 1.0 and "semantic" in second and "lexical" in second
    code, out, _ = invoke("search", "grey cat named Milo", "--user", "alice", "--json", "--explain")
    hit = json.loads(out)["results"][0]
    assert set(hit["parts"]) == {"semantic", "lexical", "recency", "confidence"}
    assert all(0.0 <= v <= 1.0 for v in hit["parts"].values()) and 0.0 <= hit["relevance"] <= 1.0
    assert hit["date"] == "1 January 2024" and hit["type"] == "thought" and hit["content_hash"]


def test_search_keeps_to_the_budget_it_is_given(store):
    code, out, _ = invoke("search", "cat named Milo", "--user", "alice", "--max-tokens", "30")
    assert code == 0 and out.startswith("(max_tokens 30 is below the smallest matching memory")
    code, out, _ = invoke("search", "cat named Milo", "--user", "alice", "--max-tokens", "60", "--json")
    reply = json.loads(out)
    assert reply["count"] == 0 and reply["reason"] and reply["tokens"] <= 60
    code, _, err = invoke("search", "cat", "--user", "alice", "--max-tokens", "0")
    assert code == 2 and "invalid_params" in err and "max_tokens" in err
