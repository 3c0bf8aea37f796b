"""GeminiBatch against a local server speaking the Batch API's REST shape (no network, no key)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from engram.consolidate.review_prompts import ContradictionReply, MergeReply
from engram.llm.base import (
    BATCH_PRICE_FACTOR,
    BatchRequest,
    LLMBadReply,
    LLMReply,
    LLMUnavailable,
)
from engram.llm.gemini import GeminiBatch, estimate_cost
from engram.settings import Settings, load_settings
from tests.gemini_batch_mock import MockBatchServer

GOOD = json.dumps({"decisions": [{"case": "c1", "action": "keep_b", "reason": "newer"}]})


@pytest.fixture
def mock() -> Iterator[MockBatchServer]:
    server = MockBatchServer()
    yield server
    server.close()


def client(mock: MockBatchServer) -> GeminiBatch:
    s = load_settings(llm="gemini", gemini_api_key="test-key", gemini_base_url=mock.url, llm_retries=1,
                      llm_timeout_s=5.0, llm_mode="batch")
    return GeminiBatch(s, backoff_s=0.01)


REQUESTS = [BatchRequest("i00001", "decide c1 of tenant one", ContradictionReply),
            BatchRequest("i00002", "merge case of tenant two", MergeReply),
            BatchRequest("i00003", "another one", ContradictionReply)]
SCHEMAS = {r.key: r.schema for r in REQUESTS}


def test_create_sends_inline_requests_with_keys_and_schemas(settings: Settings, mock: MockBatchServer) -> None:
    name = client(mock).submit(REQUESTS, "engram run-1")
    assert name == "batches/job1"
    (req,) = mock.requests
    assert req["path"].split("?")[0].endswith("/models/gemini-2.5-flash:batchGenerateContent")
    assert req["body"]["batch"]["displayName"] == "engram run-1"
    items = req["body"]["batch"]["inputConfig"]["requests"]["requests"]
    assert [i["metadata"]["key"] for i in items] == ["i00001", "i00002", "i00003"]
    assert [i["request"]["contents"][0]["parts"][0]["text"] for i in items] == [r.prompt for r in REQUESTS]
    config = items[1]["request"]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert "winner" in json.dumps(config.get("responseSchema") or config.get("responseJsonSchema"))


def test_get_walks_pending_running_succeeded_and_parses_each_item(settings: Settings, mock: MockBatchServer) -> None:
    def answer(prompt: str, schema: str) -> str | dict[str, Any]:
        if prompt.startswith("merge"):
            return '{"decisions": [{"case": "c1", "act'           # invalid JSON
        if prompt.startswith("another"):
            return {"code": 500, "message": "item failed"}        # a per-item error
        return GOOD

    mock.answer = answer
    batch = client(mock)
    name = batch.submit(REQUESTS, "engram run-1")
    seen = [batch.poll(name, SCHEMAS) for _ in range(3)]
    assert [s.state for s in seen] == ["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED", "JOB_STATE_SUCCEEDED"]
    assert not seen[0].done and not seen[0].lost and seen[0].replies == {}
    done = seen[1]
    assert done.done
    good = done.replies["i00001"]
    assert isinstance(good, LLMReply) and good.parsed.decisions[0].action == "keep_b"
    assert good.cost_usd == pytest.approx(
        estimate_cost("gemini-2.5-flash", good.input_tokens, good.output_tokens) * BATCH_PRICE_FACTOR)
    assert good.cost_usd > 0
    assert isinstance(done.replies["i00002"], LLMBadReply)
    assert isinstance(done.replies["i00003"], LLMUnavailable)


@pytest.mark.parametrize("state", ["FAILED", "CANCELLED", "EXPIRED"])
def test_ended_jobs_are_lost(settings: Settings, mock: MockBatchServer, state: str) -> None:
    mock.states = ["PENDING", state]
    batch = client(mock)
    status = batch.poll(batch.submit(REQUESTS, "x"), SCHEMAS)
    assert status.lost and not status.done and status.replies == {}
    assert status.state == f"JOB_STATE_{state}"


def test_a_job_the_provider_forgot_is_lost(settings: Settings, mock: MockBatchServer) -> None:
    status = client(mock).poll("batches/never-made", SCHEMAS)
    assert status.lost and status.state == "JOB_STATE_NOT_FOUND"
