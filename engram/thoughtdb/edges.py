"""Edges: typed links between claims, nodes and events (episodes), each with episode source_refs."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from engram import clock
from engram.errors import InvalidInput
from engram.store import db
from engram.thoughtdb.common import (
    EDGE_TYPES,
    check_source_refs,
    choice,
    items,
    new_id,
    require,
)

# Edge types with a dedicated operation that also updates the claims (see claims.py).
MANAGED_TYPES = ("supersedes", "same_as")


def create_edge(
    con: db.Connection,
    user_id: str,
    edge_type: str,
    from_id: str,
    to_id: str,
    source_refs: Sequence[str],
    now: datetime | None = None,
    atomic: bool = True,
) -> str:
    """Create an edge between two existing records of the tenant. Returns the edge id.

    supersedes and same_as edges are made by `claim supersede` / `claim same-as`, which also
    update the claims; creating them bare would leave the claims inconsistent.
    """
    require(user_id, "user")
    choice(edge_type, EDGE_TYPES, "edge_type")
    if edge_type in MANAGED_TYPES:
        raise InvalidInput(f"edge_type: {edge_type} edges are made by `engram claim "
                           f"{'supersede' if edge_type == 'supersedes' else 'same-as'}`")
    from_id, to_id = require(from_id, "from_id"), require(to_id, "to_id")
    if from_id == to_id:
        raise InvalidInput("to_id: an edge cannot point to its own from_id")
    now = now or clock.now()
    with db.transaction(con) if atomic else nullcontext():
        found = items(con, user_id, [from_id, to_id])
        for field, value in (("from_id", from_id), ("to_id", to_id)):
            if value not in found:
                raise InvalidInput(f"{field}: unknown id {value!r} (no claim, node or event of tenant {user_id})")
        refs = check_source_refs(con, user_id, source_refs)
        edge_id = new_id("edge", user_id, edge_type, from_id, to_id)
        if db.query(con, "queries/thoughtdb/thought_edge_get", user_id=user_id, id=edge_id).height:
            raise InvalidInput(f"edge_type: a {edge_type} edge {from_id} -> {to_id} already exists: {edge_id}")
        db.execute(con, "queries/thoughtdb/thought_insert_edge", id=edge_id, user_id=user_id, edge_type=edge_type,
                   from_id=from_id, to_id=to_id, source_refs=refs, now=now)
    return edge_id


def get_edge(con: db.Connection, user_id: str, edge_id: str) -> dict[str, Any]:
    """One edge; InvalidInput naming edge_id if the tenant has none."""
    frame = db.query(con, "queries/thoughtdb/thought_edge_get", user_id=user_id, id=edge_id)
    if frame.height == 0:
        raise InvalidInput(f"edge_id: unknown edge {edge_id!r} for tenant {user_id}")
    return frame.to_dicts()[0]


def list_edges(
    con: db.Connection,
    user_id: str,
    edge_type: str | None = None,
    from_id: str | None = None,
    to_id: str | None = None,
    status: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """The tenant's edges, newest first, filtered by type, endpoint and status."""
    require(user_id, "user")
    if edge_type is not None:
        choice(edge_type, EDGE_TYPES, "edge_type")
    if limit < 1:
        raise InvalidInput("limit: must be >= 1")
    return db.query(con, "queries/thoughtdb/thought_edges_list", user_id=user_id, edge_type=edge_type, from_id=from_id,
                    to_id=to_id, status=status, limit=limit).to_dicts()
