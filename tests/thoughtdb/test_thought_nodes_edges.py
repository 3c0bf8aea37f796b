"""Nodes and edges: source_refs must be episodes of the tenant; filters; retract keeps the row."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.errors import InvalidInput
from engram.thoughtdb import edges, nodes
from tests.thought_seed import claim, episode

U, OTHER = "alice", "bob"
NOW = datetime(2026, 3, 1, 9, 0, 0)


@pytest.fixture
def seeded(con):
    episode(con, U, "ep1", "We decided to use DuckDB")
    episode(con, OTHER, "ep_bob", "Bob's episode")
    claim(con, U, "c1", "DuckDB is fast enough", sources=["ep1"])
    return con


def _count(con, table: str) -> int:
    return con.execute(f"select count(*) from {table}").fetchall()[0][0]  # table names are literals here


def test_node_create_show_list_retract(seeded) -> None:
    con = seeded
    node_id = nodes.create_node(con, U, "Decision", "Use DuckDB", ["ep1"], body="single file", now=NOW)
    row = nodes.get_node(con, U, node_id)
    assert (row["node_type"], row["title"], row["body"], row["status"], row["source_refs"]) == (
        "Decision", "Use DuckDB", "single file", "active", ["ep1"])
    assert row["asserted_at"] == NOW
    assert [n["id"] for n in nodes.list_nodes(con, U, node_type="Decision")] == [node_id]
    assert nodes.list_nodes(con, U, node_type="Action") == []
    assert nodes.list_nodes(con, OTHER) == []
    res = nodes.retract_node(con, U, node_id, now=NOW)
    assert res["status_before"] == "active"
    row = nodes.get_node(con, U, node_id)
    assert row["status"] == "retracted" and row["valid_to"] == NOW and row["title"] == "Use DuckDB"
    assert [n["id"] for n in nodes.list_nodes(con, U, status="retracted")] == [node_id]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source_refs": ["nope"]}, "source_refs: unknown episode id"),
        ({"source_refs": ["ep_bob"]}, "source_refs: unknown episode id"),  # another tenant's episode
        ({"source_refs": []}, "source_refs: at least one episode id is required"),
        ({"node_type": "Plan"}, "node_type"),
        ({"title": " "}, "title: required"),
        ({"visibility": "public"}, "visibility"),
        ({"valid_from": "2026-02-01", "valid_to": "2026-01-01"}, "valid_to"),
        ({"valid_from": "not a date"}, "valid_from: not an ISO-8601"),
    ],
)
def test_node_create_rejects(seeded, kwargs: dict, message: str) -> None:
    args = {"node_type": "Decision", "title": "Use DuckDB", "source_refs": ["ep1"]}
    args.update(kwargs)
    with pytest.raises(InvalidInput, match=message):
        nodes.create_node(seeded, U, now=NOW, **args)
    assert _count(seeded, "nodes") == 0


def test_node_private_hidden_unless_asked(seeded) -> None:
    node_id = nodes.create_node(seeded, U, "Action", "Rotate keys", ["ep1"], visibility="private", now=NOW)
    assert nodes.list_nodes(seeded, U) == []
    assert [n["id"] for n in nodes.list_nodes(seeded, U, include_private=True)] == [node_id]
    with pytest.raises(InvalidInput, match="node_id: unknown"):
        nodes.get_node(seeded, U, node_id)


def test_edge_create_list_show(seeded) -> None:
    con = seeded
    node_id = nodes.create_node(con, U, "Decision", "Use DuckDB", ["ep1"], now=NOW)
    e1 = edges.create_edge(con, U, "depends_on", node_id, "c1", ["ep1"], now=NOW)
    e2 = edges.create_edge(con, U, "mentions", node_id, "ep1", ["ep1"], now=NOW)
    row = edges.get_edge(con, U, e1)
    assert (row["edge_type"], row["from_id"], row["to_id"], row["status"], row["source_refs"]) == (
        "depends_on", node_id, "c1", "active", ["ep1"])
    assert {e["id"] for e in edges.list_edges(con, U, from_id=node_id)} == {e1, e2}
    assert [e["id"] for e in edges.list_edges(con, U, edge_type="mentions")] == [e2]
    assert [e["id"] for e in edges.list_edges(con, U, to_id="c1")] == [e1]
    assert edges.list_edges(con, OTHER) == []
    with pytest.raises(InvalidInput, match="edge_type: a depends_on edge .* already exists"):
        edges.create_edge(con, U, "depends_on", node_id, "c1", ["ep1"], now=NOW)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"from_id": "missing"}, "from_id: unknown id"),
        ({"to_id": "missing"}, "to_id: unknown id"),
        ({"source_refs": ["missing"]}, "source_refs: unknown episode"),
        ({"source_refs": []}, "source_refs: at least one"),
        ({"edge_type": "causes"}, "edge_type"),
        ({"edge_type": "supersedes"}, "edge_type: supersedes edges are made by `engram claim supersede`"),
        ({"to_id": "c1", "from_id": "c1"}, "to_id: an edge cannot point"),
    ],
)
def test_edge_create_rejects(seeded, kwargs: dict, message: str) -> None:
    args = {"edge_type": "supports", "from_id": "ep1", "to_id": "c1", "source_refs": ["ep1"]}
    args.update(kwargs)
    with pytest.raises(InvalidInput, match=message):
        edges.create_edge(seeded, U, now=NOW, **args)
    assert _count(seeded, "edges") == 0


def test_edge_endpoints_are_tenant_scoped(seeded) -> None:
    with pytest.raises(InvalidInput, match="from_id: unknown id"):
        edges.create_edge(seeded, OTHER, "supports", "ep1", "c1", ["ep_bob"], now=NOW)
