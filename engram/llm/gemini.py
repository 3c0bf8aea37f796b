"""GeminiLLM: structured JSON generation on google-genai (the only module that imports it)."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import BaseModel

from engram.errors import InvalidInput
from engram.llm.base import (
    BATCH_PRICE_FACTOR,
    BatchRequest,
    BatchStatus,
    LLMBadReply,
    LLMError,
    LLMReply,
    LLMUnavailable,
    T,
    parse_reply,
    prompt_hash,
)
from engram.settings import Settings

log = logging.getLogger(__name__)
R = TypeVar("R")  # what a retried call returns

# USD per 1M tokens (input, output; thinking tokens bill as output), Gemini API paid tier,
# prompts <= 200k tokens. An estimate for reports, not an invoice: check the price page.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.0-flash-lite": (0.075, 0.30),
}
RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Timeouts and connection errors of httpx and of httpx2 (the fork google-genai may use)."""
    found: list[type[BaseException]] = [httpx.TimeoutException, httpx.TransportError, TimeoutError, ConnectionError]
    try:
        import httpx2

        found += [httpx2.TimeoutException, httpx2.TransportError]
    except ImportError:  # pragma: no cover - depends on the installed SDK extras
        pass
    return tuple(found)


TRANSPORT_ERRORS = _transport_errors()


def estimate_cost(model: str, input_tokens: int, output_tokens: int) -> float:
    """Dollar estimate from the price table (0.0 for a model it does not list)."""
    price = PRICES_PER_MTOK.get(model)
    if price is None:
        base = model.split("/")[-1]
        known = sorted((name for name in PRICES_PER_MTOK if base.startswith(name)), key=len, reverse=True)
        price = PRICES_PER_MTOK[known[0]] if known else (0.0, 0.0)
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, genai_errors.APIError):
        return exc.code in RETRYABLE_STATUS
    return isinstance(exc, TRANSPORT_ERRORS)


class GeminiLLM:
    """Gemini through google-genai: response_schema JSON output, retries with backoff on 429/5xx/timeouts."""

    def __init__(self, settings: Settings, backoff_s: float = 1.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        key = settings.gemini_api_key.get_secret_value() if settings.gemini_api_key else ""
        if not key:
            raise InvalidInput("ENGRAM_GEMINI_API_KEY: required when ENGRAM_LLM=gemini")
        self.model = settings.llm_model
        self.temperature = settings.llm_temperature
        self.retries = settings.llm_retries
        self.backoff_s = backoff_s
        self._sleep = sleep
        # The SDK's own retries are off (attempts=1): this class owns retries, so they are counted once.
        http_options = types.HttpOptions(
            base_url=settings.gemini_base_url,
            timeout=int(settings.llm_timeout_s * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client = genai.Client(api_key=key, http_options=http_options)

    def generate(self, prompt: str, schema: type[T]) -> LLMReply:
        """One structured request; LLMUnavailable after the retries, LLMBadReply for unusable JSON."""
        config = types.GenerateContentConfig(
            response_mime_type="application/json",
            response_schema=schema,
            temperature=self.temperature,
        )
        timing: dict[str, float] = {}

        def call() -> types.GenerateContentResponse:
            timing["t0"] = time.perf_counter()  # the latency of the attempt that answered
            return self._client.models.generate_content(model=self.model, contents=prompt, config=config)

        response = self._with_retries(call, "request")
        t0 = timing["t0"]
        latency_ms = (time.perf_counter() - t0) * 1000
        return self._reply(prompt, schema, response, latency_ms)

    def _with_retries(self, fn: Callable[[], R], what: str) -> R:
        """fn() with this class's retries on 429/5xx/timeouts; LLMUnavailable when refused or out of retries."""
        attempt = 0
        while True:
            try:
                return fn()
            except (json.JSONDecodeError, RecursionError) as exc:
                # the HTTP body itself is not JSON (a proxy's error page, a truncated or absurd body): the
                # provider is not answering as it should, like a 5xx, and the run goes on without it
                raise LLMUnavailable(f"gemini answered the {what} with a body that is not JSON "
                                     f"({type(exc).__name__})") from exc
            except Exception as exc:  # noqa: BLE001 - classified below, never swallowed
                if isinstance(exc, genai_errors.APIError) and not _retryable(exc):
                    raise LLMUnavailable(f"gemini refused the {what}: HTTP {exc.code} {exc.status}") from exc
                if not _retryable(exc):
                    raise
                if attempt >= self.retries:
                    raise LLMUnavailable(
                        f"gemini did not answer after {attempt + 1} attempt(s): {type(exc).__name__}"
                    ) from exc
                delay = self.backoff_s * (2 ** attempt) * (0.5 + random.random())
                log.info("gemini attempt %d failed (%s); retrying in %.2fs", attempt + 1, type(exc).__name__, delay)
                self._sleep(delay)
                attempt += 1

    def _reply(self, prompt: str, schema: type[BaseModel], response: types.GenerateContentResponse,
               latency_ms: float, price_factor: float = 1.0, hashed: str | None = None) -> LLMReply:
        usage = response.usage_metadata
        input_tokens = (usage.prompt_token_count or 0) if usage else 0
        output_tokens = ((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)) if usage else 0
        cost = estimate_cost(self.model, input_tokens, output_tokens) * price_factor
        spent = (input_tokens, output_tokens, cost)
        candidate = response.candidates[0] if response.candidates else None
        finish = candidate.finish_reason if candidate else None
        if finish is not None and finish != types.FinishReason.STOP:
            raise LLMBadReply(f"gemini stopped with finish_reason {finish.value}", spent)
        text = response.text or ""
        if not text:
            blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
            raise LLMBadReply(f"gemini returned no text (block_reason {blocked})", spent)
        try:
            parsed = parse_reply(text, schema)
        except LLMBadReply as exc:
            raise LLMBadReply(str(exc), spent) from exc
        return LLMReply(
            parsed=parsed, raw_text=text, model=self.model, prompt_hash=hashed or prompt_hash(prompt),
            input_tokens=input_tokens, output_tokens=output_tokens, latency_ms=latency_ms, cost_usd=cost,
        )


class GeminiBatch(GeminiLLM):
    """The Gemini Batch API: one job of inline requests (each with a metadata key), polled by name.

    Replies cost BATCH_PRICE_FACTOR of the interactive price. A job the provider no longer knows
    (HTTP 404) polls as JOB_STATE_NOT_FOUND, which batch mode treats like an expired job.
    """

    def submit(self, requests: list[BatchRequest], display_name: str) -> str:
        """Create the job; its name. LLMUnavailable when the provider refuses or does not answer."""
        inlined = [
            types.InlinedRequest(
                contents=r.prompt, metadata={"key": r.key},
                config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=r.schema,
                                                   temperature=self.temperature),
            )
            for r in requests
        ]
        job = self._with_retries(lambda: self._client.batches.create(
            model=self.model, src=types.BatchJobSource(inlined_requests=inlined),
            config=types.CreateBatchJobConfig(display_name=display_name[:120])), "batch call")
        if not job.name:
            raise LLMUnavailable("gemini created a batch job without a name")
        return job.name

    def poll(self, job_name: str, schemas: dict[str, type[BaseModel]]) -> BatchStatus:
        """The job's state and, once it succeeded, each item's reply (LLMBadReply for an unusable one)."""
        try:
            job = self._with_retries(lambda: self._client.batches.get(name=job_name), "batch call")
        except LLMUnavailable as exc:
            if isinstance(exc.__cause__, genai_errors.APIError) and exc.__cause__.code == 404:
                return BatchStatus("JOB_STATE_NOT_FOUND", error="the provider does not know this job")
            raise
        state = job.state.value if job.state is not None else "JOB_STATE_UNSPECIFIED"
        error = str(job.error)[:500] if getattr(job, "error", None) else None
        status = BatchStatus(state, error=error)
        if not status.done:
            return status
        responses = (job.dest.inlined_responses if job.dest else None) or []
        keys = list(schemas)
        for n, item in enumerate(responses):
            key = (item.metadata or {}).get("key") or (keys[n] if n < len(keys) else None)
            if key is None or key not in schemas:
                continue  # an item this job never held: ignored, its cases stay with the job's known items
            if item.error is not None or item.response is None:
                message = item.error.message if item.error is not None else "no response"
                status.replies[key] = LLMUnavailable(f"batch item failed: {str(message)[:300]}")
                continue
            try:
                status.replies[key] = self._reply("", schemas[key], item.response, 0.0, BATCH_PRICE_FACTOR, key)
            except LLMError as exc:
                status.replies[key] = exc
        return status
