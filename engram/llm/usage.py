"""LLM spend bookkeeping in the store: the runs row of a stage, and the run's token budget."""

from __future__ import annotations

from datetime import datetime

from engram.llm.base import Usage
from engram.store import db


def record_run_usage(con: db.Connection, run_id: str, user_id: str, stage: str, usage: Usage,
                     now: datetime, status: str = "running") -> None:
    """Add a stage's LLM calls, tokens and cost to its runs row (created with `status` if absent)."""
    if usage.requests == 0:
        return
    db.execute(con, "queries/llm/record_run_usage", run_id=run_id, user_id=user_id, stage=stage, status=status, now=now,
               llm_calls=usage.requests, input_tokens=usage.input_tokens,
               output_tokens=usage.output_tokens, cost_usd=usage.cost_usd)


def run_tokens_spent(con: db.Connection, run_id: str, user_id: str) -> int:
    """Tokens this run already spent on the tenant, over all its stages."""
    return int(db.rows(con, "queries/llm/run_llm_tokens", run_id=run_id, user_id=user_id)[0][0])
