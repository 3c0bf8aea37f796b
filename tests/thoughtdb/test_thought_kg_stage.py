"""stage_candidates writes pending KG candidates idempotently, within budgets."""

from __future__ import annotations

import pytest

from engram.errors import InvalidInput
from engram.thoughtdb.kg_extract import (
    EntityCandidate,
    KGExtraction,
    RelationCandidate,
    extract_candidates,
    stage_candidates,
)

TEXT = "Bob works at Google. Bob prefers Rust and DuckDB. Email bob@example.com on 2024-01-02."


def _entity_rows(con, user: str) -> list[tuple]:
    return con.execute(
        "select norm_name, entity_type, status, source_thought_id from kg_entity_candidates "
        "where user_id = ? order by norm_name", [user]).fetchall()


def _edge_rows(con, user: str) -> list[tuple]:
    return con.execute(
        "select src_name, relation, dst_name, status from kg_edge_candidates where user_id = ? "
        "order by src_name, relation, dst_name", [user]).fetchall()


def test_stage_inserts_pending_and_is_idempotent(con) -> None:
    ext = extract_candidates(TEXT)
    n_ent, n_edge = stage_candidates(con, "u1", "ep1", ext, max_nodes=50, max_edges=50, confidence_min=0.0)
    assert n_ent == len(ext.entities) and n_edge == len(ext.relations)
    rows = _entity_rows(con, "u1")
    assert {r[0] for r in rows} == {e.norm_name for e in ext.entities}
    assert {r[2] for r in rows} == {"pending"} and {r[3] for r in rows} == {"ep1"}
    assert ("Bob", "works_at", "Google", "pending") in _edge_rows(con, "u1")
    # staging the same thought again adds nothing
    assert stage_candidates(con, "u1", "ep1", ext, 50, 50, 0.0) == (0, 0)
    assert len(_entity_rows(con, "u1")) == len(ext.entities)
    # another tenant is separate
    stage_candidates(con, "u2", "ep1", ext, 50, 50, 0.0)
    assert len(_entity_rows(con, "u2")) == len(ext.entities)


def test_stage_respects_budgets_and_threshold(con) -> None:
    ext = KGExtraction(
        entities=[
            EntityCandidate("A", "a", "name", 0.9),
            EntityCandidate("B", "b", "name", 0.8),
            EntityCandidate("C", "c", "name", 0.3),
        ],
        relations=[
            RelationCandidate("A", "uses", "B", 0.7),
            RelationCandidate("A", "uses", "C", 0.7),  # C is under the threshold: edge dropped
            RelationCandidate("B", "likes", "A", 0.2),  # under the threshold
        ],
    )
    assert stage_candidates(con, "u1", "ep9", ext, max_nodes=5, max_edges=5, confidence_min=0.5) == (2, 1)
    assert [r[0] for r in _entity_rows(con, "u1")] == ["a", "b"]
    assert _edge_rows(con, "u1") == [("A", "uses", "B", "pending")]
    assert stage_candidates(con, "u1", "ep10", ext, max_nodes=1, max_edges=0, confidence_min=0.0) == (1, 0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"user_id": ""}, "user_id"),
        ({"source_thought_id": ""}, "source_thought_id"),
        ({"confidence_min": 1.5}, "confidence_min"),
        ({"max_nodes": -1}, "max_nodes"),
    ],
)
def test_stage_rejects_bad_input(con, kwargs: dict, field: str) -> None:
    args = {"user_id": "u1", "source_thought_id": "ep1", "max_nodes": 5, "max_edges": 5, "confidence_min": 0.0}
    args.update(kwargs)
    with pytest.raises(InvalidInput, match=field):
        stage_candidates(con, extraction=extract_candidates(TEXT), **args)
    assert _entity_rows(con, "u1") == []
