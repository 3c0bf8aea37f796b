"""The LLM seam: from_settings, the fake's parse path, usage accounting, cost estimates."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from engram.errors import InvalidInput, LLMError
from engram.llm import from_settings
from engram.llm.base import (
    LLMBadReply,
    Usage,
    estimate_tokens,
    prompt_hash,
)
from engram.llm.fake import FakeLLM
from engram.llm.gemini import GeminiLLM, estimate_cost
from engram.settings import Settings, load_settings


class Answer(BaseModel):
    value: int


def test_from_settings_picks_the_provider(settings: Settings) -> None:
    assert from_settings(settings) is None
    fake = from_settings(load_settings(llm="fake"))
    assert isinstance(fake, FakeLLM) and fake.model == "fake-llm"
    gem = from_settings(load_settings(llm="gemini", gemini_api_key="k", gemini_base_url="http://127.0.0.1:9"))
    assert isinstance(gem, GeminiLLM) and gem.model == "gemini-2.5-flash"
    with pytest.raises(InvalidInput, match="ENGRAM_GEMINI_API_KEY"):
        from_settings(load_settings(llm="gemini"))


def test_fake_parses_and_records_calls() -> None:
    llm = FakeLLM(lambda prompt, schema: '{"value": 7}')
    reply = llm.generate("what is 3+4?", Answer)
    assert reply.parsed == Answer(value=7) and llm.calls == [("Answer", "what is 3+4?")]
    assert reply.prompt_hash == prompt_hash("what is 3+4?") and reply.input_tokens == estimate_tokens("what is 3+4?")
    with pytest.raises(LLMBadReply):
        FakeLLM(lambda p, s: '{"value": "seven"}').generate("p", Answer)
    with pytest.raises(LLMError):  # a bad reply is an LLMError for callers that do not care which
        FakeLLM(lambda p, s: "[").generate("p", Answer)


def test_usage_adds_replies_and_failures() -> None:
    usage = Usage()
    llm = FakeLLM(lambda p, s: '{"value": 1}')
    usage.add(llm.generate("x" * 400, Answer))
    usage.add_failed("m", "y" * 40, (10, 5, 0.5))
    usage.add_failed("m", "z" * 40)
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (3, 100 + 10 + 10, 3 + 5)
    assert usage.cost_usd == 0.5 and len(usage.prompt_hashes) == 3 and usage.tokens == 128


@pytest.mark.parametrize(("model", "cost"), [
    ("gemini-2.5-flash", (1e6 * 0.30 + 1e6 * 2.50) / 1e6),
    ("gemini-2.5-flash-lite", 0.10 + 0.40),
    ("models/gemini-2.5-pro-preview", 1.25 + 10.00),
    ("gemini-2.5-flash-lite-preview-09-2025", 0.10 + 0.40),  # the longest known prefix wins
    ("someone-elses-model", 0.0),
])
def test_cost_estimate(model: str, cost: float) -> None:
    assert estimate_cost(model, 1_000_000, 1_000_000) == pytest.approx(cost)
