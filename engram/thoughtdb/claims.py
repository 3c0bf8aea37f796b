"""Claims: facts rows seen through the Thought DB. Append-only updates: supersede, same_as, retract.

Every change goes through engram.store.fact_ops (one fact_events row each) and runs as one transaction.
Hand-made changes carry run_id 'manual-<YYYYmmddTHHMMSS>-<8 hex>' (engram.clock.run_id).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from engram import clock
from engram.errors import InvalidInput
from engram.store import db
from engram.store.fact_ops import FactChange, apply_changes
from engram.text.normalize import content_hash
from engram.text.sentences import DIGEST
from engram.thoughtdb.common import (
    CLAIM_TYPES,
    check_source_refs,
    choice,
    new_id,
    require,
)

LIVE_STATUSES = ("active", "pending_embed")
MAX_REDIRECTS = 32


def list_claims(
    con: db.Connection,
    user_id: str,
    status: str | None = None,
    claim_type: str | None = None,
    include_private: bool = False,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """The tenant's claims, newest first, optionally filtered by status and claim_type."""
    require(user_id, "user")
    if claim_type is not None:
        choice(claim_type, (*CLAIM_TYPES, DIGEST), "claim_type")
    if limit < 1:
        raise InvalidInput("limit: must be >= 1")
    frame = db.query(con, "queries/thoughtdb/thought_claims_list", user_id=user_id, status=status,
                     claim_type=claim_type, include_private=include_private, limit=limit)
    return frame.to_dicts()


def get_claim(con: db.Connection, user_id: str, claim_id: str, include_private: bool = True) -> dict[str, Any]:
    """One claim as stored (no redirect); InvalidInput naming claim_id if the tenant has none."""
    frame = db.query(con, "queries/thoughtdb/thought_claim_get", user_id=user_id, id=claim_id, include_private=include_private)
    if frame.height == 0:
        raise InvalidInput(f"claim_id: unknown claim {claim_id!r} for tenant {user_id}")
    return frame.to_dicts()[0]


def resolve(con: db.Connection, user_id: str, claim_id: str) -> list[str]:
    """The redirect chain from claim_id to its canonical claim (same_as edges, merged_into pointers)."""
    chain = [claim_id]
    while len(chain) <= MAX_REDIRECTS:
        found = db.rows(con, "queries/thoughtdb/thought_redirects", user_id=user_id, ids=[chain[-1]])
        if not found:
            return chain
        target = found[0][1]
        if target in chain:
            raise InvalidInput(f"claim_id: redirect cycle through {chain + [target]}")
        chain.append(target)
    raise InvalidInput(f"claim_id: more than {MAX_REDIRECTS} redirects from {claim_id!r}")


def show_claim(
    con: db.Connection, user_id: str, claim_id: str, include_private: bool = False, follow: bool = True
) -> dict[str, Any]:
    """A claim with its history; a duplicate reads as its canonical claim, with `redirected_from`."""
    require(user_id, "user")
    chain = resolve(con, user_id, claim_id) if follow else [claim_id]
    claim = get_claim(con, user_id, chain[-1], include_private=include_private)
    claim["redirected_from"] = chain[:-1]
    claim["history"] = db.query(con, "queries/thoughtdb/thought_claim_history", user_id=user_id,
                                fact_id=claim["id"]).to_dicts()
    return claim


def _live(claim: dict[str, Any], field: str) -> None:
    if claim["status"] not in LIVE_STATUSES:
        raise InvalidInput(f"{field}: claim {claim['id']!r} is {claim['status']}, not active")


def _editable(claim: dict[str, Any], field: str) -> None:
    if claim["claim_type"] == DIGEST:
        raise InvalidInput(f"{field}: claim {claim['id']!r} is a digest, rebuilt each night from the turns it lists; "
                           "change the claims of those turns instead")


def _edge(con: db.Connection, user_id: str, edge_type: str, from_id: str, to_id: str,
          refs: Sequence[str], now: datetime) -> str:
    edge_id = new_id("edge", user_id, edge_type, from_id, to_id)
    db.execute(con, "queries/thoughtdb/thought_insert_edge", id=edge_id, user_id=user_id, edge_type=edge_type,
               from_id=from_id, to_id=to_id, source_refs=sorted(set(refs)), now=now)
    return edge_id


def supersede_claim(
    con: db.Connection,
    user_id: str,
    claim_id: str,
    text: str,
    claim_type: str | None = None,
    confidence: float | None = None,
    source_refs: Sequence[str] | None = None,
    valid_from: datetime | str | None = None,
    reason: str = "manual supersede",
    now: datetime | None = None,
    atomic: bool = True,
) -> dict[str, Any]:
    """Replace a claim: a new claim, a supersedes edge new -> old, the old closed (valid_to) as superseded.

    The new claim inherits the old one's sources plus `source_refs`; returns the ids written.
    """
    require(user_id, "user")
    text = require(text, "text")
    now = now or clock.now()
    start = clock.as_naive_utc(valid_from, "valid_from") or now
    run_id = clock.run_id("manual", now)
    with db.transaction(con) if atomic else nullcontext():
        old = get_claim(con, user_id, require(claim_id, "claim_id"))
        _live(old, "claim_id")
        _editable(old, "claim_id")
        ctype = choice(claim_type or old["claim_type"], CLAIM_TYPES, "claim_type")
        conf = old["confidence"] if confidence is None else float(confidence)
        if not 0.0 <= conf <= 1.0:
            raise InvalidInput("confidence: must be within [0, 1]")
        if old["valid_from"] is not None and start <= old["valid_from"]:
            raise InvalidInput("valid_from: must be after the superseded claim's valid_from")
        refs = check_source_refs(con, user_id, source_refs, required=not old["source_refs"])
        new_claim_id = new_id("fact", user_id, "supersede", old["id"], content_hash(text))
        db.execute(con, "queries/thoughtdb/thought_insert_claim", id=new_claim_id, user_id=user_id, text=text,
                   claim_type=ctype, category=old["category"], confidence=conf, asserted_at=now,
                   valid_from=start, content_hash=content_hash(text), visibility=old["visibility"],
                   is_private=old["is_private"], scope=old["scope"], run_id=run_id, now=now)
        db.execute(con, "queries/thoughtdb/thought_insert_claim_created_event",
                   id=new_id("ev", user_id, run_id, new_claim_id, "created"), user_id=user_id,
                   fact_id=new_claim_id, run_id=run_id, confidence=conf, related_fact_id=old["id"],
                   reason=reason, now=now)
        db.execute(con, "queries/thoughtdb/thought_copy_claim_sources", user_id=user_id, from_id=old["id"],
                   to_id=new_claim_id, run_id=run_id)
        if refs:
            db.execute(con, "queries/thoughtdb/thought_add_claim_sources", user_id=user_id, fact_id=new_claim_id,
                       episode_ids=refs, run_id=run_id)
        close = start if old["valid_to"] is None or old["valid_to"] > start else None
        apply_changes(con, user_id, run_id, [FactChange(
            old["id"], "superseded", reason, status="superseded", valid_to=close, related_fact_id=new_claim_id,
        )], now)
        edge_id = _edge(con, user_id, "supersedes", new_claim_id, old["id"], refs + list(old["source_refs"]), now)
    return {"claim_id": new_claim_id, "superseded_id": old["id"], "edge_id": edge_id, "run_id": run_id}


def same_as(
    con: db.Connection,
    user_id: str,
    duplicate_id: str,
    canonical_id: str,
    source_refs: Sequence[str] | None = None,
    reason: str = "manual same_as",
    now: datetime | None = None,
    atomic: bool = True,
) -> dict[str, Any]:
    """Mark a claim as a duplicate of another: a same_as edge duplicate -> canonical; reads follow it.

    The duplicate is kept with status merged_into and a pointer to the canonical claim.
    """
    require(user_id, "user")
    now = now or clock.now()
    run_id = clock.run_id("manual", now)
    with db.transaction(con) if atomic else nullcontext():
        dup = get_claim(con, user_id, require(duplicate_id, "duplicate_id"))
        _editable(dup, "duplicate_id")
        get_claim(con, user_id, require(canonical_id, "canonical_id"))
        target = resolve(con, user_id, canonical_id)[-1]
        if target == dup["id"]:
            raise InvalidInput("canonical_id: resolves to the duplicate itself (a same_as cycle)")
        canon = get_claim(con, user_id, target)
        _live(canon, "canonical_id")
        _editable(canon, "canonical_id")
        if dup["status"] == "merged_into":
            raise InvalidInput(f"duplicate_id: claim {dup['id']!r} already redirects to {dup['merged_into_id']!r}")
        refs = check_source_refs(con, user_id, source_refs, required=False)
        apply_changes(con, user_id, run_id, [FactChange(
            dup["id"], "merged", reason, status="merged_into", merged_into_id=target, related_fact_id=target,
        )], now)
        edge_id = _edge(con, user_id, "same_as", dup["id"], target, refs + list(dup["source_refs"]), now)
    return {"duplicate_id": dup["id"], "canonical_id": target, "edge_id": edge_id, "run_id": run_id}


def retract_claim(
    con: db.Connection,
    user_id: str,
    claim_id: str,
    reason: str = "manual retract",
    now: datetime | None = None,
    atomic: bool = True,
) -> dict[str, Any]:
    """Retract a claim: status retracted and validity closed now; the row is kept for audit."""
    require(user_id, "user")
    now = now or clock.now()
    run_id = clock.run_id("manual", now)
    with db.transaction(con) if atomic else nullcontext():
        claim = get_claim(con, user_id, require(claim_id, "claim_id"))
        if claim["status"] == "retracted":
            raise InvalidInput(f"claim_id: claim {claim['id']!r} is already retracted")
        close = now if claim["valid_to"] is None or claim["valid_to"] > now else None
        apply_changes(con, user_id, run_id, [FactChange(
            claim["id"], "retracted", reason, status="retracted", valid_to=close,
        )], now)
    return {"claim_id": claim["id"], "status_before": claim["status"], "run_id": run_id}

