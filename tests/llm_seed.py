"""Seeding helpers for the resolve tests: facts, contradiction penalties and queued reviews."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from engram.consolidate.resolve import queue_contradiction
from engram.store import db, fact_ops
from engram.text.normalize import content_hash, stable_id

NOW = datetime(2026, 11, 20, 3, 0, 0)
QUEUED_RUN = "run-queued"


def add_facts(con: db.Connection, user_id: str, facts: list[dict[str, Any]]) -> None:
    """Insert facts: each dict needs id and text; confidence, asserted_at, evidence_count optional."""
    rows = []
    for f in facts:
        at = f.get("asserted_at", NOW - timedelta(days=10))
        rows.append({
            "id": f["id"], "user_id": user_id, "text": f["text"], "claim_type": f.get("claim_type", "fact"),
            "category": "general", "confidence": f.get("confidence", 0.8), "confidence_at": NOW,
            "evidence_count": f.get("evidence_count", 1), "status": f.get("status", "active"),
            "asserted_at": at, "valid_from": at, "created_at": at, "last_updated": NOW, "last_reinforced_at": NOW,
            "embedding": None, "embedding_model": None, "embedding_dim": None, "content_hash": content_hash(f["text"]),
            "tags": [], "visibility": "project", "is_private": False, "run_id": "seed", "reason": "seed",
        })
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("id", pa.string()), ("user_id", pa.string()), ("text", pa.string()), ("claim_type", pa.string()),
        ("category", pa.string()), ("confidence", pa.float64()), ("confidence_at", pa.timestamp("us")),
        ("evidence_count", pa.int32()), ("status", pa.string()), ("asserted_at", pa.timestamp("us")),
        ("valid_from", pa.timestamp("us")), ("created_at", pa.timestamp("us")), ("last_updated", pa.timestamp("us")),
        ("last_reinforced_at", pa.timestamp("us")), ("embedding", pa.list_(pa.float32())),
        ("embedding_model", pa.string()), ("embedding_dim", pa.int32()), ("content_hash", pa.string()),
        ("tags", pa.list_(pa.string())), ("visibility", pa.string()), ("is_private", pa.bool_()),
        ("run_id", pa.string()), ("reason", pa.string()),
    ]))
    with db.registered(con, "incoming_facts", table):
        db.execute(con, "queries/consolidate/insert_facts")
        db.execute(con, "queries/consolidate/insert_created_events", run_id="seed", now=NOW)


def contradiction(con: db.Connection, user_id: str, a: str, b: str) -> str:
    """Penalise both facts (halved, as the confidence stage does) and queue the review; its id."""
    conf = dict(con.execute("select id, confidence from facts where user_id = $u", {"u": user_id}).fetchall())
    fact_ops.apply_changes(con, user_id, QUEUED_RUN, [
        fact_ops.FactChange(a, "contradicted", "penalty", confidence=conf[a] / 2, related_fact_id=b),
        fact_ops.FactChange(b, "contradicted", "penalty", confidence=conf[b] / 2, related_fact_id=a),
    ], NOW)
    queue_contradiction(con, user_id, QUEUED_RUN, NOW, (a, b), "opposite valence; cos 0.91")
    return stable_id("rv", user_id, "contradiction", *sorted((a, b)))


def merge_case(con: db.Connection, user_id: str, ids: list[str]) -> str:
    """Queue an ambiguous merge review over these facts; its id."""
    rid = stable_id("rv", user_id, "merge", *sorted(ids))
    table = pa.Table.from_pylist([{
        "id": rid, "user_id": user_id, "kind": "merge", "subject_ids": sorted(ids),
        "reason": "no fact above auto-merge confidence", "run_id": QUEUED_RUN, "created_at": NOW,
    }], schema=pa.schema([
        ("id", pa.string()), ("user_id", pa.string()), ("kind", pa.string()), ("subject_ids", pa.list_(pa.string())),
        ("reason", pa.string()), ("run_id", pa.string()), ("created_at", pa.timestamp("us")),
    ]))
    with db.registered(con, "incoming_reviews", table):
        db.execute(con, "queries/consolidate/queue_reviews")
    return rid


def facts_of(con: db.Connection, user_id: str) -> dict[str, tuple]:
    """id -> (confidence, status, merged_into_id, valid_to) for the tenant."""
    rows = con.execute("select id, confidence, status, merged_into_id, valid_to from facts where user_id = $u",
                       {"u": user_id}).fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}


def review(con: db.Connection, review_id: str) -> dict[str, Any]:
    """The review row as a dict."""
    cur = con.execute("select * from llm_reviews where id = $id", {"id": review_id})
    names = [d[0] for d in cur.description]
    return dict(zip(names, cur.fetchall()[0], strict=True))
