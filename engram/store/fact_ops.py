"""Audited fact operations: every change to a fact goes through here and writes fact_events.

Operations are set-based (one statement per kind of write) so a nightly stage over a large
store is a handful of statements, and they run inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from engram.errors import InvalidInput
from engram.store import db

if TYPE_CHECKING:  # imported where used: `engram search` never writes facts, and polars costs ~0.2 s to import
    import polars as pl

FACT_STATUSES = {
    "pending_embed", "active", "deprecated", "merged_into", "superseded", "retracted", "removal", "archived",
}
ACTIONS = {
    "created", "reinforced", "decayed", "contradicted", "merged", "deprecated", "superseded",
    "archived", "resolved", "restored", "retracted", "reverted", "reactivated",
}


@dataclass(frozen=True)
class FactChange:
    """One change to one fact; None fields stay as they are.

    A confidence given here is the value as of the apply time (decay already applied).
    """

    fact_id: str
    action: str
    reason: str
    confidence: float | None = None
    status: str | None = None
    merged_into_id: str | None = None
    valid_to: datetime | None = None
    related_fact_id: str | None = None
    evidence_delta: int = 0
    reinforced: bool = False


@cache
def change_schema() -> dict[str, pl.DataType]:
    """The columns of a changes frame and their types."""
    import polars as pl

    return {
        "fact_id": pl.String, "action": pl.String, "reason": pl.String, "confidence": pl.Float64,
        "status": pl.String, "merged_into_id": pl.String, "valid_to": pl.Datetime("us"),
        "related_fact_id": pl.String, "evidence_delta": pl.Int64, "reinforced": pl.Boolean,
    }


def changes_frame(changes: Sequence[FactChange] | pl.DataFrame) -> pl.DataFrame:
    """Changes as a DataFrame with the full change schema, validated."""
    import polars as pl

    schema = change_schema()
    if isinstance(changes, pl.DataFrame):
        frame = changes
        for name, dtype in schema.items():
            if name not in frame.columns:
                default = 0 if name == "evidence_delta" else (False if name == "reinforced" else None)
                frame = frame.with_columns(pl.lit(default, dtype=dtype).alias(name))
        frame = frame.select([pl.col(n).cast(t) for n, t in schema.items()])
    else:
        # column lists, not dataclasses.asdict per change (a deep copy each: seconds for a night's 40k)
        frame = pl.DataFrame({name: [getattr(c, name) for c in changes] for name in schema}, schema=schema)
    if frame.height == 0:
        return frame
    if frame["fact_id"].n_unique() != frame.height:
        raise InvalidInput("fact_id: one change per fact per call")
    bad_actions = set(frame["action"].unique().to_list()) - ACTIONS
    if bad_actions:
        raise InvalidInput(f"action: unknown {sorted(bad_actions)}")
    bad_status = set(frame["status"].drop_nulls().unique().to_list()) - FACT_STATUSES
    if bad_status:
        raise InvalidInput(f"status: unknown {sorted(bad_status)}")
    conf = frame["confidence"].drop_nulls()
    if conf.len() and (conf.is_nan().any() or conf.min() < 0 or conf.max() > 1):
        raise InvalidInput("confidence: must be within [0, 1]")
    return frame


def apply_changes(
    con: db.Connection,
    user_id: str,
    run_id: str,
    changes: Sequence[FactChange] | pl.DataFrame,
    now: datetime,
) -> int:
    """Apply changes to the tenant's facts and write one fact_events row each.

    Unknown fact ids raise InvalidInput before anything is written. Returns the number applied.
    """
    frame = changes_frame(changes)
    if frame.height == 0:
        return 0
    with db.registered(con, "fact_changes", frame.to_arrow()):
        missing = db.rows(con, "queries/store/fact_changes_unknown_ids", user_id=user_id)
        if missing:
            raise InvalidInput(f"fact_id: unknown for tenant {user_id}: {[m[0] for m in missing[:5]]}")
        db.execute(con, "queries/store/insert_fact_events_from_changes", user_id=user_id, run_id=run_id, now=now)
        db.execute(con, "queries/store/update_facts_from_changes", user_id=user_id, now=now)
    return frame.height


def add_sources(con: db.Connection, user_id: str, run_id: str, sources: pl.DataFrame) -> None:
    """Insert fact_sources rows (fact_id, episode_id, relation, similarity); existing ones are kept."""
    import polars as pl

    if sources.height == 0:
        return
    frame = sources.select(
        pl.lit(user_id).alias("user_id"),
        pl.col("fact_id").cast(pl.String),
        pl.col("episode_id").cast(pl.String),
        pl.col("relation").cast(pl.String),
        pl.col("similarity").cast(pl.Float64),
        pl.lit(run_id).alias("run_id"),
    )
    with db.registered(con, "incoming_sources", frame.to_arrow()):
        db.execute(con, "queries/store/insert_fact_sources")


def insert_facts(con: db.Connection, user_id: str, run_id: str, now: datetime, facts: list[dict[str, Any]],
                 sources: list[dict[str, Any]]) -> None:
    """Insert new fact rows (an id that exists is skipped) with a created event each, and their sources."""
    if not facts:
        return
    import polars as pl
    import pyarrow as pa

    with db.registered(con, "incoming_facts", pa.Table.from_pylist(facts)):
        db.execute(con, "queries/consolidate/insert_facts")
        db.execute(con, "queries/consolidate/insert_created_events", run_id=run_id, now=now)
    add_sources(con, user_id, run_id, pl.DataFrame(sources))


def merge(
    con: db.Connection,
    user_id: str,
    run_id: str,
    winner_id: str,
    loser_ids: Sequence[str],
    reason: str,
    now: datetime,
    winner_confidence: float | None = None,
) -> None:
    """Merge losers into the winner: losers become merged_into (kept), lineage is unioned."""
    import polars as pl

    if winner_id in loser_ids:
        raise InvalidInput("fact_id: a fact cannot be merged into itself")
    losers = pl.DataFrame({"loser_id": list(loser_ids)}, schema={"loser_id": pl.String})
    with db.registered(con, "merge_losers", losers.to_arrow()):
        db.execute(con, "queries/store/copy_sources_to_winner", user_id=user_id, winner_id=winner_id, run_id=run_id)
        gained = db.rows(con, "queries/store/loser_evidence_total", user_id=user_id)[0][0] or 0
    changes = [
        FactChange(loser, "merged", reason, status="merged_into", merged_into_id=winner_id,
                   related_fact_id=winner_id)
        for loser in loser_ids
    ]
    changes.append(
        FactChange(winner_id, "merged", reason, confidence=winner_confidence,
                   related_fact_id=loser_ids[0] if len(loser_ids) == 1 else None,
                   evidence_delta=int(gained), reinforced=True)
    )
    apply_changes(con, user_id, run_id, changes, now)


def revert_run(con: db.Connection, user_id: str, run_id: str, now: datetime) -> int:
    """Undo every fact change a run made (confidence, status, merge pointer, valid_to), newest first; audited."""
    events = db.rows(con, "queries/store/fact_events_of_run", user_id=user_id, run_id=run_id)
    reverted = 0
    revert_run_id = f"revert-{run_id}"
    for fact_id, action, conf_before, status_before in events:
        if action == "created":
            change = FactChange(fact_id, "reverted", f"revert {run_id}: created", status="retracted")
        else:
            change = FactChange(
                fact_id, "reverted", f"revert {run_id}: {action}", confidence=conf_before,
                status=status_before,
            )
        apply_changes(con, user_id, f"{revert_run_id}-{reverted}", [change], now)
        if action == "merged" and status_before != "merged_into":
            db.execute(con, "queries/store/clear_merge_pointer", user_id=user_id, fact_id=fact_id)
        if action == "superseded" and status_before != "superseded":
            db.execute(con, "queries/store/clear_valid_to", user_id=user_id, fact_id=fact_id)
        reverted += 1
    return reverted
