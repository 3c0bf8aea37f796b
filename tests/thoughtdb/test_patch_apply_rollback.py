"""Graph patches: validation applies nothing, apply + rollback restores the exact prior state, audited."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.errors import EngramError, InvalidInput
from engram.thoughtdb import patches
from tests.thought_seed import claim, episode

U, OTHER = "alice", "bob"
NOW = datetime(2026, 3, 1, 9, 0, 0)
LATER = datetime(2026, 3, 2, 9, 0, 0)


@pytest.fixture
def seeded(con):
    episode(con, U, "ep1", "I live in Berlin")
    episode(con, U, "ep2", "I moved to Lisbon")
    claim(con, U, "c_old", "Alice lives in Berlin", sources=["ep1"])
    claim(con, U, "c_dup", "Alice's home is Berlin", sources=["ep1"])
    claim(con, U, "c_wrong", "Alice hates coffee", sources=["ep2"])
    episode(con, OTHER, "ep_b", "I like tea")
    claim(con, OTHER, "c_other", "Bob likes tea", sources=["ep_b"])
    return con


def snapshot(con) -> dict[str, list[tuple]]:
    """Every row of the tables a patch may touch (all tenants), in a stable order."""
    order = {"facts": "user_id, id", "nodes": "user_id, id", "edges": "user_id, id",
             "fact_sources": "user_id, fact_id, episode_id, relation", "fact_events": "id",
             "episodes": "user_id, id"}
    return {t: con.execute(f"select * from {t} order by {o}").fetchall() for t, o in order.items()}


FULL = {
    "id": "p1",
    "source": "test",
    "ops": [
        {"op": "create_node", "key": "d", "node_type": "Decision", "title": "Move to Lisbon", "source_refs": ["ep2"]},
        {"op": "create_edge", "edge_type": "depends_on", "from_id": "@d", "to_id": "c_old", "source_refs": ["ep1"]},
        {"op": "same_as", "duplicate_id": "c_dup", "canonical_id": "c_old", "source_refs": ["ep1"]},
        {"op": "supersede", "claim_id": "c_old", "text": "Alice lives in Lisbon", "source_refs": ["ep2"]},
        {"op": "retract", "id": "c_wrong", "source_refs": ["ep2"]},
        {"op": "create_summary", "title": "Alice moved", "covers": ["@d", "ep2"], "source_refs": ["ep1", "ep2"]},
    ],
}


@pytest.mark.parametrize("bad_op, message", [
    ({"op": "retract", "id": "c_nope", "source_refs": ["ep1"]}, "ops.1 (retract): id: unknown id 'c_nope'"),
    ({"op": "retract", "id": "c_other", "source_refs": ["ep1"]}, "ops.1 (retract): id: unknown id 'c_other'"),
    ({"op": "retract", "id": "c_wrong", "source_refs": []}, "ops.1.source_refs"),
    ({"op": "retract", "id": "c_wrong"}, "ops.1.source_refs"),
    ({"op": "retract", "id": "c_wrong", "source_refs": ["ep_b"]}, "ops.1 (retract): source_refs: unknown episode"),
    ({"op": "retract", "id": "ep1", "source_refs": ["ep1"]}, "episodes are never changed"),
    ({"op": "delete_episode", "id": "ep1", "source_refs": ["ep1"]}, "ops.1"),
    ({"op": "retract", "id": "c_wrong", "source_refs": ["ep1"], "status": "x"}, "ops.1.status"),
    ({"op": "create_edge", "edge_type": "supports", "from_id": "@zz", "to_id": "c_old", "source_refs": ["ep1"]},
     "ops.1 (create_edge): from_id: unknown alias"),
])
def test_invalid_patch_applies_nothing(seeded, bad_op, message) -> None:
    con = seeded
    before = snapshot(con)
    patch = {"id": "bad", "ops": [FULL["ops"][3], bad_op]}
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        patches.apply_patch(con, U, patch, now=NOW)
    assert snapshot(con) == before
    assert con.execute("select count(*) from graph_patches").fetchone()[0] == 0


def test_failure_in_a_later_op_rolls_back_earlier_ops(seeded) -> None:
    con = seeded
    before = snapshot(con)
    # passes the static checks but fails while applying: c_wrong is retracted twice
    patch = {"ops": [FULL["ops"][3], {"op": "retract", "id": "c_wrong", "source_refs": ["ep2"]},
                     {"op": "retract", "id": "c_wrong", "source_refs": ["ep2"]}]}
    with pytest.raises(InvalidInput, match=r"ops\.2 \(retract\): claim_id: .*already retracted"):
        patches.apply_patch(con, U, patch, now=NOW)
    assert snapshot(con) == before


def test_apply_then_rollback_restores_exact_state(seeded) -> None:
    con = seeded
    before = snapshot(con)
    res = patches.apply_patch(con, U, FULL, now=NOW)
    assert res["patch_id"] == "p1" and res["status"] == "applied"
    after = snapshot(con)
    assert after["episodes"] == before["episodes"]
    status = dict(con.execute("select id, status from facts where user_id = ?", [U]).fetchall())
    assert status["c_old"] == "superseded" and status["c_wrong"] == "retracted"
    assert status["c_dup"] == "merged_into"
    assert len(after["nodes"]) == 2 and len(after["edges"]) == 5  # depends_on, supersedes, same_as, 2 derived_from
    n_changes = con.execute("select count(*) from graph_patch_changes where patch_id = 'p1'").fetchone()[0]
    assert n_changes > 0
    events_after_apply = con.execute("select count(*) from fact_events where user_id = ?", [U]).fetchone()[0]

    rb = patches.rollback_patch(con, U, "p1", now=LATER)
    assert rb["status"] == "rolled_back"
    restored = snapshot(con)
    for table in ("facts", "nodes", "edges", "fact_sources", "episodes"):
        assert restored[table] == before[table], table
    audit = con.execute(
        "select fact_id, action, run_id, reason from fact_events where user_id = ? and run_id = 'rollback-p1' "
        "order by fact_id", [U]).fetchall()
    new_claim = res["ops"][3]["claim_id"]
    assert [a[0] for a in audit] == sorted(["c_old", "c_dup", "c_wrong", new_claim])
    assert {a[1] for a in audit} == {"reverted"}
    assert dict((a[0], a[3]) for a in audit)[new_claim] == "rollback patch p1: created"
    statuses = dict(con.execute(
        "select fact_id, status_before || '->' || status_after from fact_events where user_id = ? "
        "and run_id = 'rollback-p1' and fact_id <> ?", [U, new_claim]).fetchall())
    assert statuses == {"c_old": "superseded->active", "c_dup": "merged_into->active", "c_wrong": "retracted->active"}
    assert con.execute("select count(*) from fact_events where user_id = ?", [U]).fetchone()[0] == \
        events_after_apply + 4
    row = con.execute("select status, rolled_back_at from graph_patches where id = 'p1'").fetchone()
    assert row == ("rolled_back", LATER)


def test_same_patch_id_twice_refused(seeded) -> None:
    con = seeded
    patches.apply_patch(con, U, FULL, now=NOW)
    state = snapshot(con)
    with pytest.raises(InvalidInput, match="already applied"):
        patches.apply_patch(con, U, FULL, now=LATER)
    assert snapshot(con) == state
    patches.rollback_patch(con, U, "p1", now=LATER)
    with pytest.raises(InvalidInput, match="already applied"):
        patches.apply_patch(con, U, FULL, now=LATER)


def test_rollback_twice_refused(seeded) -> None:
    con = seeded
    patches.apply_patch(con, U, FULL, now=NOW)
    patches.rollback_patch(con, U, "p1", now=LATER)
    state = snapshot(con)
    with pytest.raises(InvalidInput, match="already rolled_back"):
        patches.rollback_patch(con, U, "p1", now=LATER)
    assert snapshot(con) == state
    with pytest.raises(InvalidInput, match="unknown patch"):
        patches.rollback_patch(con, OTHER, "p1", now=LATER)


def test_dry_run_writes_nothing(seeded) -> None:
    con = seeded
    before = snapshot(con)
    res = patches.apply_patch(con, U, FULL, dry_run=True, now=NOW)
    assert res["status"] == "dry_run" and res["changes"]["nodes"]["created"] == 2
    assert snapshot(con) == before
    assert con.execute("select count(*) from graph_patches").fetchone()[0] == 0


def test_rollback_refused_when_rows_changed_since(seeded) -> None:
    con = seeded
    patches.apply_patch(con, U, {"id": "p2", "ops": [FULL["ops"][4]]}, now=NOW)
    con.execute("update facts set confidence = 0.1 where user_id = ? and id = 'c_wrong'", [U])
    with pytest.raises(InvalidInput, match="changed after the patch"):
        patches.rollback_patch(con, U, "p2", now=LATER)
    assert con.execute("select status from graph_patches where id = 'p2'").fetchone()[0] == "applied"


def test_a_change_outside_the_named_rows_is_refused(seeded, monkeypatch) -> None:
    # rows are imaged only where the patch names them; the fingerprint diff catches any other change
    con = seeded
    before = snapshot(con)
    monkeypatch.setattr(patches, "_candidate_ids", lambda con, user_id, patch: [])
    with pytest.raises(EngramError, match="outside the patch's records"):
        patches.apply_patch(con, U, {"ops": [FULL["ops"][4]]}, now=NOW)
    assert snapshot(con) == before


def test_untouched_rows_are_not_recorded(seeded) -> None:
    con = seeded
    patches.apply_patch(con, U, {"id": "p3", "ops": [FULL["ops"][4]]}, now=NOW)
    recorded = con.execute("select table_name, row_key, before is null from graph_patch_changes "
                           "where patch_id = 'p3' order by seq").fetchall()
    assert recorded == [("facts", "c_wrong", False)]
