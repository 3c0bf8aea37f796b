"""KG moderation: list staged candidates; approve (promote, deduped by normalised name) or reject them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from engram import clock
from engram.errors import InvalidInput
from engram.store import db
from engram.thoughtdb.common import new_id, require
from engram.thoughtdb.kg_extract import norm_name

CANDIDATE_STATUSES = ("pending", "approved", "rejected")

_ENTITY_SCHEMA = pa.schema({
    "id": pa.string(), "user_id": pa.string(), "name": pa.string(), "norm_name": pa.string(),
    "entity_type": pa.string(), "confidence": pa.float64(), "source_refs": pa.list_(pa.string()),
    "created_at": pa.timestamp("us"),
})
_EDGE_SCHEMA = pa.schema({
    "id": pa.string(), "user_id": pa.string(), "src_entity_id": pa.string(), "relation": pa.string(),
    "dst_entity_id": pa.string(), "confidence": pa.float64(), "source_refs": pa.list_(pa.string()),
    "created_at": pa.timestamp("us"),
})


def list_candidates(
    con: db.Connection, user_id: str, status: str | None = "pending", limit: int = 100
) -> dict[str, list[dict[str, Any]]]:
    """The tenant's staged entity and edge candidates (default: pending), most confident first."""
    require(user_id, "user")
    if status is not None and status not in CANDIDATE_STATUSES:
        raise InvalidInput(f"status: {status!r} is not one of {', '.join(CANDIDATE_STATUSES)}")
    if limit < 1:
        raise InvalidInput("limit: must be >= 1")
    return {
        "entities": db.query(con, "queries/thoughtdb/thought_kg_entity_candidates_list", user_id=user_id, status=status,
                             limit=limit).to_dicts(),
        "edges": db.query(con, "queries/thoughtdb/thought_kg_edge_candidates_list", user_id=user_id, status=status,
                          limit=limit).to_dicts(),
    }


def _load(con: db.Connection, user_id: str, ids: list[str]) -> tuple[list[dict], list[dict]]:
    ents = db.query(con, "queries/thoughtdb/thought_kg_entity_candidates_by_ids", user_id=user_id, ids=ids).to_dicts()
    edges = db.query(con, "queries/thoughtdb/thought_kg_edge_candidates_by_ids", user_id=user_id, ids=ids).to_dicts()
    return ents, edges


def moderate(
    con: db.Connection,
    user_id: str,
    approve: Sequence[str] = (),
    reject: Sequence[str] = (),
    mark_removal: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Approve and/or reject candidates by id, all or nothing (one transaction).

    Approving an entity candidate creates the tenant's kg_entity for its normalised name or adds
    its source thought to the existing one; approving an edge candidate does the same for both
    endpoint entities and the relation. Unknown ids, an id in both lists, or flipping an earlier
    decision raise InvalidInput naming the field and nothing is written. Re-applying the same
    decision is a no-op. With mark_removal, source thoughts with no pending candidates left are
    marked for removal.
    """
    require(user_id, "user")
    approve_ids = sorted({a.strip() for a in approve if a and a.strip()})
    reject_ids = sorted({r.strip() for r in reject if r and r.strip()})
    if not approve_ids and not reject_ids:
        raise InvalidInput("approve/reject: give at least one candidate id")
    both = set(approve_ids) & set(reject_ids)
    if both:
        raise InvalidInput(f"approve/reject: ids in both lists: {sorted(both)[:10]}")
    now = now or clock.now()
    with db.transaction(con):
        decided: dict[str, str] = {}
        ents_by_decision: dict[str, list[dict]] = {}
        edges_by_decision: dict[str, list[dict]] = {}
        for field, decision, ids in (("approve", "approved", approve_ids), ("reject", "rejected", reject_ids)):
            if not ids:
                continue
            ents, edges = _load(con, user_id, ids)
            unknown = sorted(set(ids) - {r["id"] for r in ents} - {r["id"] for r in edges})
            if unknown:
                raise InvalidInput(f"{field}: unknown candidate id(s) for tenant {user_id}: {unknown[:10]}")
            flipped = sorted(r["id"] for r in ents + edges if r["status"] not in ("pending", decision))
            if flipped:
                raise InvalidInput(f"{field}: candidate(s) already decided otherwise: {flipped[:10]}")
            ents_by_decision[decision] = [r for r in ents if r["status"] == "pending"]
            edges_by_decision[decision] = [r for r in edges if r["status"] == "pending"]
            for r in ents + edges:
                decided[r["id"]] = decision
        promoted = _promote(con, user_id, ents_by_decision.get("approved", []),
                            edges_by_decision.get("approved", []), now)
        for decision in ("approved", "rejected"):
            ent_ids = [r["id"] for r in ents_by_decision.get(decision, [])]
            edge_ids = [r["id"] for r in edges_by_decision.get(decision, [])]
            if ent_ids:
                db.execute(con, "queries/thoughtdb/thought_kg_decide_entity_candidates", user_id=user_id, ids=ent_ids,
                           status=decision, now=now)
            if edge_ids:
                db.execute(con, "queries/thoughtdb/thought_kg_decide_edge_candidates", user_id=user_id, ids=edge_ids,
                           status=decision, now=now)
        sources = sorted({r["source_thought_id"] for rows in (*ents_by_decision.values(), *edges_by_decision.values())
                          for r in rows})
        if mark_removal and sources:
            db.execute(con, "queries/thoughtdb/thought_kg_mark_sources_removal", user_id=user_id, ids=sources)
    changed = {d: sum(len(v.get(d, [])) for v in (ents_by_decision, edges_by_decision))
               for d in ("approved", "rejected")}
    return {"approved": changed["approved"], "rejected": changed["rejected"],
            "unchanged": len(decided) - changed["approved"] - changed["rejected"], **promoted}


def _promote(con: db.Connection, user_id: str, ents: list[dict], edges: list[dict], now: datetime) -> dict[str, int]:
    """Upsert kg_entities / kg_edges for approved candidates, deduped by normalised name."""
    if not ents and not edges:
        return {"entities_created": 0, "entities_merged": 0, "edges_created": 0, "edges_merged": 0}
    wanted: dict[str, dict[str, Any]] = {}  # norm_name -> entity row to upsert

    def want(name: str, norm: str, entity_type: str | None, conf: float, source: str) -> None:
        row = wanted.get(norm)
        if row is None:
            wanted[norm] = {"name": name, "norm_name": norm, "entity_type": entity_type, "confidence": conf,
                            "source_refs": {source}}
            return
        row["source_refs"].add(source)
        if conf > row["confidence"]:
            row["confidence"] = conf
        row["entity_type"] = row["entity_type"] or entity_type

    for r in sorted(ents, key=lambda r: (-r["confidence"], r["id"])):
        want(r["name"], r["norm_name"] or norm_name(r["name"]), r["entity_type"], r["confidence"],
             r["source_thought_id"])
    edge_keys = []
    for r in sorted(edges, key=lambda r: r["id"]):
        src, dst = norm_name(r["src_name"]), norm_name(r["dst_name"])
        if not src or not dst:
            raise InvalidInput(f"approve: edge candidate {r['id']} has an empty endpoint name")
        # an endpoint gains no confidence from an edge; an entity created only for an edge keeps the edge's
        want(r["src_name"], src, None, r["confidence"] if src not in wanted else wanted[src]["confidence"],
             r["source_thought_id"])
        want(r["dst_name"], dst, None, r["confidence"] if dst not in wanted else wanted[dst]["confidence"],
             r["source_thought_id"])
        edge_keys.append((src, r["relation"], dst, r["confidence"], r["source_thought_id"]))

    existing: dict[str, str] = {}
    for row in db.query(con, "queries/thoughtdb/thought_kg_entities_by_norm", user_id=user_id,
                        norm_names=sorted(wanted)).iter_rows(named=True):
        existing.setdefault(row["norm_name"], row["id"])
    ids = {norm: existing.get(norm) or new_id("kge", user_id, norm) for norm in wanted}
    entity_rows = [
        {"id": ids[n], "user_id": user_id, "name": w["name"], "norm_name": n, "entity_type": w["entity_type"],
         "confidence": w["confidence"], "source_refs": sorted(w["source_refs"]), "created_at": now}
        for n, w in sorted(wanted.items())
    ]
    edge_rows: dict[str, dict[str, Any]] = {}
    for src, rel, dst, conf, source in edge_keys:
        edge_id = new_id("kgr", user_id, ids[src], rel, ids[dst])
        row = edge_rows.setdefault(edge_id, {"id": edge_id, "user_id": user_id, "src_entity_id": ids[src],
                                             "relation": rel, "dst_entity_id": ids[dst], "confidence": conf,
                                             "source_refs": set(), "created_at": now})
        row["confidence"] = max(row["confidence"], conf)
        row["source_refs"].add(source)
    existing_edges = {e["id"] for e in db.query(con, "queries/thoughtdb/thought_kg_edges_by_ids", user_id=user_id,
                                                ids=sorted(edge_rows)).iter_rows(named=True)}
    with db.registered(con, "incoming_kg_entities", pa.Table.from_pylist(entity_rows, schema=_ENTITY_SCHEMA)):
        db.execute(con, "queries/thoughtdb/thought_kg_upsert_entities")
    if edge_rows:
        frame = pa.Table.from_pylist([{**r, "source_refs": sorted(r["source_refs"])} for r in edge_rows.values()],
                                     schema=_EDGE_SCHEMA)
        with db.registered(con, "incoming_kg_edges", frame):
            db.execute(con, "queries/thoughtdb/thought_kg_upsert_edges")
    return {
        "entities_created": sum(1 for n in wanted if n not in existing),
        "entities_merged": sum(1 for n in wanted if n in existing),
        "edges_created": sum(1 for e in edge_rows if e not in existing_edges),
        "edges_merged": sum(1 for e in edge_rows if e in existing_edges),
    }
