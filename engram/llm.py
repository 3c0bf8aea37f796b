"""The LLM seam: a narrow protocol, a deterministic fake, and from_settings."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from pydantic import BaseModel

from engram.errors import LLMError
from engram.settings import Settings

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class LLMReply:
    """One structured reply and what it cost."""

    parsed: BaseModel
    raw_text: str
    model: str
    prompt_hash: str
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost_usd: float


class LLM(Protocol):
    """What the pipeline needs from a language model: structured JSON generation."""

    model: str

    def generate(self, prompt: str, schema: type[T]) -> LLMReply: ...


def prompt_hash(prompt: str) -> str:
    """sha256 of the prompt: recorded instead of the prompt itself."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


@dataclass
class FakeLLM:
    """Deterministic LLM for tests: `responder(prompt, schema)` returns a JSON string.

    Takes the same parse and validation path as the real client; records every call.
    """

    responder: Callable[[str, type[BaseModel]], str]
    model: str = "fake-llm"
    calls: list[tuple[str, str]] = field(default_factory=list)

    def generate(self, prompt: str, schema: type[T]) -> LLMReply:
        self.calls.append((schema.__name__, prompt))
        text = self.responder(prompt, schema)
        try:
            parsed = schema.model_validate(json.loads(text))
        except (json.JSONDecodeError, ValueError) as exc:
            raise LLMError(f"reply is not valid {schema.__name__} JSON: {exc}") from exc
        return LLMReply(parsed, text, self.model, prompt_hash(prompt),
                        len(prompt) // 4, len(text) // 4, 0.0, 0.0)


def from_settings(settings: Settings) -> LLM | None:
    """The configured LLM, or None when ENGRAM_LLM=none (cases then stay queued)."""
    if settings.llm == "none":
        return None
    if settings.llm == "fake":
        from engram.llm_fake_rules import rule_based_responder

        return FakeLLM(rule_based_responder)
    from engram.llm_gemini import GeminiLLM

    return GeminiLLM(settings)
