"""GeminiLLM against a local HTTP server speaking the Gemini REST shape (no network, no key)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from engram.llm.base import LLMBadReply, LLMUnavailable
from engram.llm.gemini import GeminiLLM, estimate_cost
from engram.settings import Settings, load_settings


class Decision(BaseModel):
    case: str
    action: Literal["keep_a", "keep_b"]


class Reply(BaseModel):
    decisions: list[Decision]


def gemini_body(text: str, prompt_tokens: int = 120, out_tokens: int = 30, thoughts: int = 0,
                finish: str = "STOP") -> dict[str, Any]:
    """A generateContent response as the REST API returns it."""
    usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": out_tokens,
             "totalTokenCount": prompt_tokens + out_tokens + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mock-1",
    }


class MockGemini:
    """Scripted responses: each item is (status, body dict or raw bytes, delay seconds); records every request."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, Any], float]] = []
        self.requests: list[dict[str, Any]] = []
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                mock.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status, payload, delay = mock.script.pop(0) if mock.script else (500, {"error": {}}, 0.0)
                if delay:
                    time.sleep(delay)
                raw = isinstance(payload, bytes)  # a body that is not JSON (a proxy's error page)
                data = payload if raw else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "text/html" if raw else "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mock() -> Iterator[MockGemini]:
    server = MockGemini()
    yield server
    server.close()


def gemini(settings: Settings, mock: MockGemini, **overrides: Any) -> GeminiLLM:
    s = load_settings(**{**dict(llm="gemini", gemini_api_key="test-key", gemini_base_url=mock.url,
                                llm_retries=2, llm_timeout_s=5.0), **overrides})
    return GeminiLLM(s, backoff_s=0.01)


REPLY = json.dumps({"decisions": [{"case": "c1", "action": "keep_b"}]})


def test_success_parses_reply_and_records_usage(settings: Settings, mock: MockGemini) -> None:
    mock.script.append((200, gemini_body(REPLY, prompt_tokens=1000, out_tokens=200, thoughts=100), 0.0))
    llm = gemini(settings, mock)
    reply = llm.generate("decide case c1", Reply)
    assert reply.parsed == Reply(decisions=[Decision(case="c1", action="keep_b")])
    assert (reply.input_tokens, reply.output_tokens) == (1000, 300)  # thinking bills as output
    assert reply.cost_usd == pytest.approx(estimate_cost("gemini-2.5-flash", 1000, 300))
    assert reply.cost_usd == pytest.approx((1000 * 0.30 + 300 * 2.50) / 1e6)
    assert reply.model == "gemini-2.5-flash" and len(reply.prompt_hash) == 64
    assert "decide case c1" not in reply.prompt_hash
    # the REST request: model path, key header, JSON mode with the schema, temperature
    (req,) = mock.requests
    assert req["path"].endswith("/models/gemini-2.5-flash:generateContent")
    assert req["headers"].get("x-goog-api-key") == "test-key"
    config = req["body"]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = json.dumps(config.get("responseSchema") or config.get("responseJsonSchema"))
    assert "keep_a" in schema and "decisions" in schema
    assert config["temperature"] == 0.0
    assert req["body"]["contents"][0]["parts"][0]["text"] == "decide case c1"


def test_malformed_json_is_a_bad_reply_with_spent_tokens(settings: Settings, mock: MockGemini) -> None:
    mock.script.append((200, gemini_body('{"decisions": [{"case": "c1", "act'), 0.0))
    with pytest.raises(LLMBadReply) as err:
        gemini(settings, mock).generate("p", Reply)
    assert err.value.spent is not None and err.value.spent[0] == 120
    assert len(mock.requests) == 1  # a bad reply is not retried here; the review row records it


def test_action_outside_schema_is_a_bad_reply(settings: Settings, mock: MockGemini) -> None:
    bad = json.dumps({"decisions": [{"case": "c1", "action": "delete_everything"}]})
    mock.script.append((200, gemini_body(bad), 0.0))
    with pytest.raises(LLMBadReply):
        gemini(settings, mock).generate("p", Reply)


def test_unknown_ids_parse_but_are_left_to_validation(settings: Settings, mock: MockGemini) -> None:
    """The client only checks the schema; ids are checked by engram.consolidate.resolve (see test_llm_resolve)."""
    mock.script.append((200, gemini_body(json.dumps({"decisions": [{"case": "c999", "action": "keep_a"}]})), 0.0))
    reply = gemini(settings, mock).generate("p", Reply)
    assert reply.parsed.decisions[0].case == "c999"


def test_429_then_success_retries(settings: Settings, mock: MockGemini) -> None:
    quota = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    mock.script += [(429, quota, 0.0), (503, {"error": {"code": 503, "message": "x", "status": "UNAVAILABLE"}}, 0.0),
                    (200, gemini_body(REPLY), 0.0)]
    reply = gemini(settings, mock).generate("p", Reply)
    assert reply.parsed.decisions[0].action == "keep_b"
    assert len(mock.requests) == 3


def test_429_until_retries_run_out(settings: Settings, mock: MockGemini) -> None:
    quota = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    mock.script += [(429, quota, 0.0)] * 5
    with pytest.raises(LLMUnavailable):
        gemini(settings, mock, llm_retries=1).generate("p", Reply)
    assert len(mock.requests) == 2


def test_400_is_not_retried(settings: Settings, mock: MockGemini) -> None:
    mock.script += [(400, {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}, 0.0)] * 3
    with pytest.raises(LLMUnavailable, match="400"):
        gemini(settings, mock).generate("p", Reply)
    assert len(mock.requests) == 1


def test_timeout_then_success(settings: Settings, mock: MockGemini) -> None:
    mock.script += [(200, gemini_body(REPLY), 2.5), (200, gemini_body(REPLY), 0.0)]
    t0 = time.monotonic()
    reply = gemini(settings, mock, llm_timeout_s=1.0).generate("p", Reply)
    assert reply.parsed.decisions[0].case == "c1"
    assert len(mock.requests) == 2
    assert time.monotonic() - t0 < 2.4  # the slow answer was abandoned, not awaited


def test_timeout_every_time_raises_unavailable(settings: Settings, mock: MockGemini) -> None:
    mock.script += [(200, gemini_body(REPLY), 1.6)] * 2
    with pytest.raises(LLMUnavailable, match="attempt"):
        gemini(settings, mock, llm_timeout_s=1.0, llm_retries=1).generate("p", Reply)


def test_missing_key_names_the_variable(settings: Settings) -> None:
    with pytest.raises(Exception, match="ENGRAM_GEMINI_API_KEY"):
        GeminiLLM(load_settings(llm="gemini"))


@pytest.mark.parametrize("body", [b"<html><body>502 Bad Gateway</body></html>", b"[" * 100_000])
def test_a_body_that_is_not_json_is_an_unavailable_provider(settings: Settings, mock: MockGemini, body: bytes) -> None:
    mock.script += [(200, body, 0.0)] * 3
    with pytest.raises(LLMUnavailable, match="not JSON"):
        gemini(settings, mock).generate("p", Reply)


def test_a_reply_nested_too_deep_is_a_bad_reply(settings: Settings, mock: MockGemini) -> None:
    mock.script.append((200, gemini_body("[" * 100_000), 0.0))
    with pytest.raises(LLMBadReply, match="not valid Reply JSON"):
        gemini(settings, mock).generate("p", Reply)
