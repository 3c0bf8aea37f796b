"""KG moderation: approve promotes and dedupes by normalised name; reject; all-or-nothing."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.errors import InvalidInput
from engram.thoughtdb import kg_moderation
from engram.thoughtdb.kg_extract import (
    EntityCandidate,
    KGExtraction,
    RelationCandidate,
    stage_candidates,
)
from tests.thought_seed import episode

U, OTHER = "alice", "bob"
NOW = datetime(2026, 3, 1)


def _stage(con, user: str, thought: str, entities: list[tuple[str, str, float]],
           relations: list[tuple[str, str, str, float]] = ()) -> None:
    ext = KGExtraction(
        entities=[EntityCandidate(n, n.casefold(), t, c) for n, t, c in entities],
        relations=[RelationCandidate(s, r, d, c) for s, r, d, c in relations],
    )
    stage_candidates(con, user, thought, ext, 50, 50, 0.0, now=NOW)


def _cand(con, table: str, user: str = U) -> dict[str, tuple]:
    sql = {"kg_entity_candidates": "select id, norm_name, source_thought_id, status from kg_entity_candidates "
                                   "where user_id = ? order by id",
           "kg_edge_candidates": "select id, src_name || '>' || relation || '>' || dst_name, source_thought_id, "
                                 "status from kg_edge_candidates where user_id = ? order by id"}[table]
    return {f"{r[1]}@{r[2]}": (r[0], r[3]) for r in con.execute(sql, [user]).fetchall()}


def _entities(con, user: str = U) -> list[tuple]:
    return con.execute("select norm_name, name, entity_type, confidence, source_refs, status from kg_entities "
                       "where user_id = ? order by norm_name", [user]).fetchall()


@pytest.fixture
def staged(con):
    episode(con, U, "t1", "Alice works at Acme", kind="thought")
    episode(con, U, "t2", "ACME hired Bob", kind="thought")
    _stage(con, U, "t1", [("Alice", "name", 0.7), ("Acme", "name", 0.6)], [("Alice", "works_at", "Acme", 0.5)])
    _stage(con, U, "t2", [("ACME", "organization", 0.8), ("Bob", "name", 0.6)], [("ACME", "hired", "Bob", 0.4)])
    _stage(con, OTHER, "t9", [("Acme", "name", 0.9)])
    return con


def test_candidates_listing(staged) -> None:
    listed = kg_moderation.list_candidates(staged, U)
    assert [e["norm_name"] for e in listed["entities"]] == ["acme", "alice", "acme", "bob"]
    assert len(listed["edges"]) == 2
    assert kg_moderation.list_candidates(staged, U, status="approved") == {"entities": [], "edges": []}
    with pytest.raises(InvalidInput, match="status"):
        kg_moderation.list_candidates(staged, U, status="maybe")


def test_approve_promotes_and_dedupes(staged) -> None:
    c = _cand(staged, "kg_entity_candidates")
    res = kg_moderation.moderate(staged, U, approve=[c["acme@t1"][0], c["acme@t2"][0], c["alice@t1"][0]], now=NOW)
    assert res["approved"] == 3 and res["entities_created"] == 2 and res["entities_merged"] == 0
    assert _entities(staged) == [
        ("acme", "ACME", "organization", 0.8, ["t1", "t2"], "active"),  # one entity for Acme / ACME
        ("alice", "Alice", "name", 0.7, ["t1"], "active"),
    ]
    after = _cand(staged, "kg_entity_candidates")
    assert after["acme@t1"][1] == after["acme@t2"][1] == after["alice@t1"][1] == "approved"
    assert after["bob@t2"][1] == "pending"
    # the other tenant's Acme is untouched and not merged in
    assert _entities(staged, OTHER) == []
    # approving the same again changes nothing; an edge merges into existing entities
    e = _cand(staged, "kg_edge_candidates")
    res = kg_moderation.moderate(staged, U, approve=[c["acme@t1"][0], e["Alice>works_at>Acme@t1"][0]], now=NOW)
    assert res["approved"] == 1 and res["unchanged"] == 1
    assert res["entities_created"] == 0 and res["entities_merged"] == 2 and res["edges_created"] == 1
    kg_edges = staged.execute(
        "select s.norm_name, k.relation, d.norm_name, k.source_refs from kg_edges k "
        "join kg_entities s on s.user_id = k.user_id and s.id = k.src_entity_id "
        "join kg_entities d on d.user_id = k.user_id and d.id = k.dst_entity_id where k.user_id = ?", [U]).fetchall()
    assert kg_edges == [("alice", "works_at", "acme", ["t1"])]
    assert len(_entities(staged)) == 2


def test_edge_approval_creates_missing_endpoints(staged) -> None:
    e = _cand(staged, "kg_edge_candidates")
    res = kg_moderation.moderate(staged, U, approve=[e["ACME>hired>Bob@t2"][0]], now=NOW)
    assert res["entities_created"] == 2 and res["edges_created"] == 1
    assert [(r[0], r[4]) for r in _entities(staged)] == [("acme", ["t2"]), ("bob", ["t2"])]


def test_reject_and_mark_removal(staged) -> None:
    c = _cand(staged, "kg_entity_candidates")
    e = _cand(staged, "kg_edge_candidates")
    res = kg_moderation.moderate(staged, U, approve=[c["alice@t1"][0]],
                                 reject=[c["acme@t1"][0], e["Alice>works_at>Acme@t1"][0]],
                                 mark_removal=True, now=NOW)
    assert (res["approved"], res["rejected"]) == (1, 2)
    assert _cand(staged, "kg_entity_candidates")["acme@t1"][1] == "rejected"
    assert [r[0] for r in _entities(staged)] == ["alice"]
    status = dict(staged.execute("select id, status from episodes where user_id = ?", [U]).fetchall())
    assert status == {"t1": "removal", "t2": "active"}  # t2 still has pending candidates
    with pytest.raises(InvalidInput, match="reject: candidate\\(s\\) already decided otherwise"):
        kg_moderation.moderate(staged, U, reject=[c["alice@t1"][0]], now=NOW)


def test_unknown_or_conflicting_ids_apply_nothing(staged) -> None:
    c = _cand(staged, "kg_entity_candidates")
    before = _cand(staged, "kg_entity_candidates")
    with pytest.raises(InvalidInput, match="approve: unknown candidate id\\(s\\).*nope"):
        kg_moderation.moderate(staged, U, approve=[c["alice@t1"][0], "nope"], now=NOW)
    with pytest.raises(InvalidInput, match="reject: unknown candidate"):
        kg_moderation.moderate(staged, U, approve=[c["alice@t1"][0]], reject=["nope"], now=NOW)
    other = _cand(staged, "kg_entity_candidates", OTHER)["acme@t9"][0]
    with pytest.raises(InvalidInput, match="approve: unknown candidate"):
        kg_moderation.moderate(staged, U, approve=[other], now=NOW)  # another tenant's candidate
    with pytest.raises(InvalidInput, match="ids in both lists"):
        kg_moderation.moderate(staged, U, approve=[c["bob@t2"][0]], reject=[c["bob@t2"][0]], now=NOW)
    with pytest.raises(InvalidInput, match="at least one"):
        kg_moderation.moderate(staged, U, now=NOW)
    assert _cand(staged, "kg_entity_candidates") == before
    assert _entities(staged) == []
    assert staged.execute("select count(*) from kg_edges").fetchall() == [(0,)]
