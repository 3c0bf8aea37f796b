"""The LLM seam: a narrow protocol, a deterministic fake, usage accounting, and from_settings.

Memory text never goes into a prompt as prose: `data_block` (engram.llm.prompt_quote) quotes records as
JSON lines between markers derived from the content's hash (so a memory cannot forge the closing
marker), and the prompts built on top say that data is never instructions.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from engram.errors import LLMError

T = TypeVar("T", bound=BaseModel)


class LLMUnavailable(LLMError):
    """The provider did not answer (network, timeout, 429/5xx after retries, bad key)."""

    code = "llm_unavailable"


class LLMBadReply(LLMError):
    """The provider answered, but not with JSON matching the requested schema.

    `spent` holds (input_tokens, output_tokens, cost_usd) when the provider reported them.
    """

    code = "llm_bad_reply"

    def __init__(self, message: str, spent: tuple[int, int, float] | None = None) -> None:
        super().__init__(message)
        self.spent = spent


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


BATCH_PRICE_FACTOR = 0.5  # the Gemini Batch API bills half the interactive price
BATCH_DONE_STATES = {"JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED"}
BATCH_LOST_STATES = {"JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED", "JOB_STATE_NOT_FOUND"}


@dataclass(frozen=True)
class BatchRequest:
    """One item of a batch job: its key, prompt and reply schema."""

    key: str
    prompt: str
    schema: type[BaseModel]


@dataclass
class BatchStatus:
    """What a poll of a batch job found: its state and, once done, each item's reply or error."""

    state: str
    replies: dict[str, LLMReply | LLMError] = field(default_factory=dict)
    error: str | None = None

    @property
    def done(self) -> bool:
        """The job finished and its replies are here."""
        return self.state in BATCH_DONE_STATES

    @property
    def lost(self) -> bool:
        """The job ended without replies (failed, cancelled, expired, or unknown to the provider)."""
        return self.state in BATCH_LOST_STATES


class BatchLLM(Protocol):
    """What batch mode needs: submit a job of structured requests, and poll it by name."""

    model: str

    def submit(self, requests: list[BatchRequest], display_name: str) -> str: ...

    def poll(self, job_name: str, schemas: dict[str, type[BaseModel]]) -> BatchStatus: ...


@dataclass
class Usage:
    """LLM spend of one stage: requests, tokens, cost, latency and the prompt hashes."""

    model: str | None = None
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    prompt_hashes: list[str] = field(default_factory=list)

    def add(self, reply: LLMReply) -> None:
        """Count one answered request."""
        self.model = reply.model
        self.requests += 1
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cost_usd += reply.cost_usd
        self.latency_ms += reply.latency_ms
        self.prompt_hashes.append(reply.prompt_hash)

    def add_failed(self, model: str, prompt: str, spent: tuple[int, int, float] | None = None) -> None:
        """Count a request that got no usable answer (tokens as reported, else estimated)."""
        self.model = model
        self.requests += 1
        inp, out, cost = spent or (estimate_tokens(prompt), 0, 0.0)
        self.input_tokens += inp
        self.output_tokens += out
        self.cost_usd += cost
        self.prompt_hashes.append(prompt_hash(prompt))

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, Any]:
        """Plain values for counts and reports."""
        return {"model": self.model, "requests": self.requests, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": round(self.cost_usd, 6),
                "latency_ms": round(self.latency_ms, 1)}


def prompt_hash(prompt: str) -> str:
    """sha256 of the prompt: recorded instead of the prompt itself."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    """Token estimate used for budgeting before a call: about 4 characters per token."""
    return math.ceil(len(text) / 4)


def parse_reply(text: str, schema: type[T]) -> T:
    """Parse a reply as the schema; LLMBadReply (naming the schema) if it does not fit."""
    try:
        return schema.model_validate(json.loads(text))
    except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: JSON nested absurdly deep
        raise LLMBadReply(f"reply is not valid {schema.__name__} JSON: {str(exc)[:300]}") from exc
