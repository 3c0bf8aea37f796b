"""The deterministic fake LLM: takes the real parse and validation path, records every call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel

from engram.llm.base import LLMReply, T, estimate_tokens, parse_reply, prompt_hash


@dataclass
class FakeLLM:
    """Deterministic LLM for tests: `responder(prompt, schema)` returns a JSON string.

    Takes the same parse and validation path as the real client; records every call.
    Token counts are the same character estimate the budget uses.
    """

    responder: Callable[[str, type[BaseModel]], str]
    model: str = "fake-llm"
    calls: list[tuple[str, str]] = field(default_factory=list)

    def generate(self, prompt: str, schema: type[T]) -> LLMReply:
        """Answer with the responder's JSON, parsed as `schema`."""
        self.calls.append((schema.__name__, prompt))
        text = self.responder(prompt, schema)
        parsed = parse_reply(text, schema)
        return LLMReply(parsed, text, self.model, prompt_hash(prompt),
                        estimate_tokens(prompt), estimate_tokens(text), 0.0, 0.0)
