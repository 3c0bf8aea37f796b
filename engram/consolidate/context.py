"""What every nightly stage is given (StageContext) and what it returns (StagePlan, StageResult)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np
import polars as pl
import pyarrow as pa

from engram.llm.base import Usage
from engram.settings import Settings
from engram.store import db
from engram.text.normalize import stable_id

Writer = Callable[[db.Connection], None]


@dataclass(frozen=True)
class StageContext:
    """The run a stage belongs to: the tenant's store (settings routed to its shard), tenant, run, time."""

    settings: Settings
    user_id: str
    run_id: str
    as_of: datetime

    def open(self) -> AbstractContextManager[db.Connection]:
        """A short connection to the tenant's store."""
        return db.open_store(self.settings)


@dataclass
class StagePlan:
    """What a stage computed while the store was closed: its counts and the write that applies it.

    The runner runs `write` and records the stage's runs row in one transaction. A stage that writes
    in steps of its own (embed, archive, publish, resolve) has done so already and has no `write`.
    """

    counts: dict[str, Any]
    write: Writer | None = None
    llm_usage: Usage | None = None  # recorded on the stage's runs row with the write
    changes: list[dict[str, Any]] | None = None  # publish: the run's fact changes, for the report


Status = Literal["completed", "skipped", "failed"]


@dataclass(frozen=True)
class StageResult:
    """One stage's outcome for one tenant: its status, counts (as on its runs row) and time."""

    stage: str
    status: Status
    counts: dict[str, Any]
    seconds: float = 0.0
    changes: tuple[dict[str, Any], ...] | None = None
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        """The result as the flow returns and the run report reads it (JSON-safe)."""
        out: dict[str, Any] = {**self.counts, "seconds": self.seconds}
        if self.status == "skipped":
            out["skipped"] = True
        if self.status == "failed":
            out["failed"] = self.error
        if self.changes is not None:
            out["changes"] = list(self.changes)
        return out

    def log_line(self) -> str:
        """Its numbers, never memory text; or its error."""
        if self.status == "failed":
            return f"failed: {self.error}"
        parts = [f"{k}={v}" for k, v in self.counts.items() if isinstance(v, int | float) and not isinstance(v, bool)]
        return (" ".join(parts) or "done") + (" (already done)" if self.status == "skipped" else "")


def vectors_of(column: pa.ChunkedArray | pl.Series, dim: int) -> np.ndarray:
    """A list<float> column as a float32 [n, dim] matrix, without a Python loop."""
    arr = column.to_arrow() if isinstance(column, pl.Series) else column
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(arr), dim)


def new_review(ctx: StageContext, kind: str, subject_ids: list[str], reason: str) -> dict[str, Any]:
    """A review row (contradiction | merge | extraction) for the tenant's queue; its id is stable."""
    return {
        "id": stable_id("rv", ctx.user_id, kind, *subject_ids), "user_id": ctx.user_id, "kind": kind,
        "subject_ids": subject_ids, "reason": reason, "run_id": ctx.run_id, "created_at": ctx.as_of,
    }


REVIEW_SCHEMA = pa.schema([
    ("id", pa.string()), ("user_id", pa.string()), ("kind", pa.string()),
    ("subject_ids", pa.list_(pa.string())), ("reason", pa.string()), ("run_id", pa.string()),
    ("created_at", pa.timestamp("us")),
])


def queue_reviews(con: db.Connection, reviews: list[dict[str, Any]]) -> None:
    """Insert review rows (an existing review id is kept)."""
    if not reviews:
        return
    with db.registered(con, "incoming_reviews", pa.Table.from_pylist(reviews, schema=REVIEW_SCHEMA)):
        db.execute(con, "queries/consolidate/queue_reviews")


def queued_pairs(con: db.Connection, user_id: str, kind: str) -> set[frozenset[str]]:
    """The subject sets of the tenant's reviews of one kind (any status)."""
    return {frozenset(r[0]) for r in db.rows(con, "queries/consolidate/review_subjects", user_id=user_id, kind=kind)}


def fact_texts(con: db.Connection, user_id: str, ids: list[str]) -> dict[str, str]:
    """{fact id: text} of the given facts."""
    with db.registered(con, "wanted_facts", pa.table({"id": pa.array(sorted(set(ids)), pa.string())})):
        return dict(db.rows(con, "queries/consolidate/fact_texts", user_id=user_id))

