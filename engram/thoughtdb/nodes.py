"""Nodes: Decision | Action | Summary records with validity, visibility and episode source_refs."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from engram import clock
from engram.errors import InvalidInput
from engram.store import db
from engram.text.normalize import content_hash
from engram.thoughtdb.common import (
    NODE_TYPES,
    SCOPES,
    VISIBILITIES,
    check_source_refs,
    choice,
    new_id,
    require,
)


def node_id_for(user_id: str, node_type: str, title: str, body: str | None, refs: Sequence[str]) -> str:
    """The deterministic id of a node with this content and these sources."""
    return new_id("node", user_id, node_type, content_hash(title), content_hash(body or ""), *sorted(set(refs)))


def create_node(
    con: db.Connection,
    user_id: str,
    node_type: str,
    title: str,
    source_refs: Sequence[str],
    body: str | None = None,
    valid_from: datetime | str | None = None,
    valid_to: datetime | str | None = None,
    visibility: str = "project",
    scope: str = "project",
    now: datetime | None = None,
    atomic: bool = True,
) -> str:
    """Create a node; every source_ref must be an episode id of the tenant. Returns the node id."""
    require(user_id, "user")
    choice(node_type, NODE_TYPES, "node_type")
    title = require(title, "title")
    choice(visibility, VISIBILITIES, "visibility")
    choice(scope, SCOPES, "scope")
    start = clock.as_naive_utc(valid_from, "valid_from")
    end = clock.as_naive_utc(valid_to, "valid_to")
    if start is not None and end is not None and end <= start:
        raise InvalidInput("valid_to: must be after valid_from")
    now = now or clock.now()
    with db.transaction(con) if atomic else nullcontext():
        refs = check_source_refs(con, user_id, source_refs)
        node_id = node_id_for(user_id, node_type, title, body, refs)
        if get_node(con, user_id, node_id, include_private=True, missing_ok=True) is not None:
            raise InvalidInput(f"title: an identical {node_type} node already exists: {node_id}")
        db.execute(con, "queries/thoughtdb/thought_insert_node", id=node_id, user_id=user_id, node_type=node_type,
                   title=title, body=body, asserted_at=now, valid_from=start, valid_to=end,
                   visibility=visibility, scope=scope, source_refs=refs, now=now)
    return node_id


def get_node(
    con: db.Connection, user_id: str, node_id: str, include_private: bool = False, missing_ok: bool = False
) -> dict[str, Any] | None:
    """One node; InvalidInput naming node_id if the tenant has none (None when missing_ok)."""
    frame = db.query(con, "queries/thoughtdb/thought_node_get", user_id=user_id, id=node_id, include_private=include_private)
    if frame.height == 0:
        if missing_ok:
            return None
        raise InvalidInput(f"node_id: unknown node {node_id!r} for tenant {user_id}")
    return frame.to_dicts()[0]


def list_nodes(
    con: db.Connection,
    user_id: str,
    node_type: str | None = None,
    status: str | None = None,
    include_private: bool = False,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """The tenant's nodes, newest first, optionally filtered by type and status."""
    require(user_id, "user")
    if node_type is not None:
        choice(node_type, NODE_TYPES, "node_type")
    if limit < 1:
        raise InvalidInput("limit: must be >= 1")
    return db.query(con, "queries/thoughtdb/thought_nodes_list", user_id=user_id, node_type=node_type, status=status,
                    include_private=include_private, limit=limit).to_dicts()


def retract_node(con: db.Connection, user_id: str, node_id: str, now: datetime | None = None,
                 atomic: bool = True) -> dict[str, Any]:
    """Retract a node: status retracted, validity closed now; the row is kept for audit."""
    require(user_id, "user")
    now = now or clock.now()
    with db.transaction(con) if atomic else nullcontext():
        node = get_node(con, user_id, require(node_id, "node_id"), include_private=True)
        assert node is not None
        if node["status"] == "retracted":
            raise InvalidInput(f"node_id: node {node_id!r} is already retracted")
        db.execute(con, "queries/thoughtdb/thought_retract_node", user_id=user_id, id=node_id, now=now)
    return {"node_id": node_id, "status_before": node["status"]}
