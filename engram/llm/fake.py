"""The deterministic fake LLM: takes the real parse and validation path, records every call."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engram.llm.base import (
    BatchRequest,
    BatchStatus,
    LLMBadReply,
    LLMReply,
    T,
    estimate_tokens,
    parse_reply,
    prompt_hash,
)


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


@dataclass
class FakeBatch:
    """Deterministic batch client for tests and offline runs: a job is answered when submitted.

    Jobs live in `jobs_dir` as JSON files (replies and token counts, no prompts) so a later process
    can collect them, or in memory when jobs_dir is None. Costs are 0, like FakeLLM's.
    """

    responder: Callable[[str, type[BaseModel]], str]
    jobs_dir: Path | None = None
    model: str = "fake-llm"
    calls: list[tuple[str, str]] = field(default_factory=list)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def submit(self, requests: list[BatchRequest], display_name: str) -> str:
        """Answer every request now and keep the answers under a new job name."""
        answers = {}
        for r in requests:
            self.calls.append((r.schema.__name__, r.prompt))
            answers[r.key] = [self.responder(r.prompt, r.schema), estimate_tokens(r.prompt)]
        name = "batches/fake-" + prompt_hash(display_name + "".join(r.prompt for r in requests))[:16]
        job = {"state": "JOB_STATE_SUCCEEDED", "answers": answers}
        if self.jobs_dir is None:
            self.jobs[name] = job
        else:
            self.jobs_dir.mkdir(parents=True, exist_ok=True)
            (self.jobs_dir / f"{name.split('/')[-1]}.json").write_text(json.dumps(job))
        return name

    def poll(self, job_name: str, schemas: dict[str, type[BaseModel]]) -> BatchStatus:
        """The stored answers, parsed like the real client's (a reply that does not parse is an LLMBadReply)."""
        path = self.jobs_dir / f"{job_name.split('/')[-1]}.json" if self.jobs_dir is not None else None
        job = self.jobs.get(job_name) if path is None else (json.loads(path.read_text()) if path.exists() else None)
        if job is None:
            return BatchStatus("JOB_STATE_NOT_FOUND", error="the fake does not know this job")
        status = BatchStatus(job["state"])
        for key, (text, in_tokens) in job["answers"].items():
            if key not in schemas:
                continue
            try:
                parsed = parse_reply(text, schemas[key])
            except LLMBadReply as exc:
                status.replies[key] = exc
                continue
            status.replies[key] = LLMReply(parsed, text, self.model, key, in_tokens, estimate_tokens(text), 0.0, 0.0)
        return status
