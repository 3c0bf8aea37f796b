"""Claims: supersede / same_as / retract round trips, audited, tenant-scoped, all-or-nothing."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.errors import InvalidInput
from engram.store.checks import run_checks
from engram.thoughtdb import claims
from tests.thought_seed import claim, episode, events, fact_row

U, OTHER = "alice", "bob"
NOW = datetime(2026, 3, 1, 9, 0, 0)


@pytest.fixture
def seeded(con):
    episode(con, U, "ep1", "I live in Berlin")
    episode(con, U, "ep2", "I moved to Lisbon")
    claim(con, U, "c_old", "Alice lives in Berlin", sources=["ep1"])
    claim(con, U, "c_dup", "Alice's home is Berlin", sources=["ep1"])
    episode(con, OTHER, "ep_b", "I like tea")
    claim(con, OTHER, "c_other", "Bob likes tea", sources=["ep_b"])
    return con


def _edges(con, user: str) -> list[tuple]:
    return con.execute("select edge_type, from_id, to_id, source_refs from edges where user_id = ? "
                       "order by edge_type, from_id", [user]).fetchall()


def test_supersede_round_trip(seeded) -> None:
    con = seeded
    res = claims.supersede_claim(con, U, "c_old", "Alice lives in Lisbon", source_refs=["ep2"], now=NOW)
    new_id = res["claim_id"]
    old, new = fact_row(con, U, "c_old"), fact_row(con, U, new_id)
    assert old["status"] == "superseded" and old["valid_to"] == NOW and old["text"] == "Alice lives in Berlin"
    assert new["status"] == "active" and new["valid_from"] == NOW and new["text"] == "Alice lives in Lisbon"
    assert new["claim_type"] == "fact" and new["confidence"] == old["confidence"]
    assert _edges(con, U) == [("supersedes", new_id, "c_old", ["ep1", "ep2"])]
    sources = con.execute("select episode_id from fact_sources where user_id = ? and fact_id = ? order by 1",
                          [U, new_id]).fetchall()
    assert sources == [("ep1",), ("ep2",)]  # lineage inherited plus the new evidence
    run_id = res["run_id"]
    assert run_id.startswith("manual-")
    assert events(con, U, "c_old") == [("superseded", "active", "superseded", new_id, run_id)]
    assert events(con, U, new_id) == [("created", None, "active", "c_old", run_id)]
    assert set(run_checks(con).values()) == {0}  # every invariant check still passes
    # the old claim is kept and can no longer be superseded
    with pytest.raises(InvalidInput, match="claim_id: .* is superseded"):
        claims.supersede_claim(con, U, "c_old", "Alice lives in Porto", now=NOW)


def test_supersede_rejects_bad_input_and_writes_nothing(seeded) -> None:
    con = seeded
    before = con.execute("select count(*) from facts").fetchall()
    with pytest.raises(InvalidInput, match="source_refs: unknown episode"):
        claims.supersede_claim(con, U, "c_old", "Alice lives in Lisbon", source_refs=["nope"], now=NOW)
    with pytest.raises(InvalidInput, match="claim_id: unknown claim"):
        claims.supersede_claim(con, U, "c_other", "Bob likes coffee", now=NOW)  # other tenant's claim
    with pytest.raises(InvalidInput, match="claim_type"):
        claims.supersede_claim(con, U, "c_old", "x y z", claim_type="opinion", now=NOW)
    with pytest.raises(InvalidInput, match="text: required"):
        claims.supersede_claim(con, U, "c_old", "  ", now=NOW)
    claim(con, U, "c_bare", "A claim without sources")
    before = con.execute("select count(*) from facts").fetchall()
    with pytest.raises(InvalidInput, match="source_refs: at least one episode id is required"):
        claims.supersede_claim(con, U, "c_bare", "A better claim", now=NOW)  # provenance would be lost
    assert con.execute("select count(*) from facts").fetchall() == before
    assert fact_row(con, U, "c_old")["status"] == "active"
    assert con.execute("select count(*) from fact_events").fetchall() == [(0,)]
    assert _edges(con, U) == []


def test_same_as_redirects_reads(seeded) -> None:
    con = seeded
    res = claims.same_as(con, U, "c_dup", "c_old", now=NOW)
    assert res["canonical_id"] == "c_old"
    dup = fact_row(con, U, "c_dup")
    assert dup["status"] == "merged_into" and dup["merged_into_id"] == "c_old" and dup["text"]
    assert _edges(con, U) == [("same_as", "c_dup", "c_old", ["ep1"])]
    assert events(con, U, "c_dup") == [("merged", "active", "merged_into", "c_old", res["run_id"])]
    shown = claims.show_claim(con, U, "c_dup")
    assert shown["id"] == "c_old" and shown["redirected_from"] == ["c_dup"]
    assert claims.show_claim(con, U, "c_dup", follow=False)["id"] == "c_dup"
    assert set(run_checks(con).values()) == {0}
    # after c_old is superseded, c_dup still reads c_old (the redirect is to the claim, kept for audit)
    with pytest.raises(InvalidInput, match="duplicate_id: .* already redirects"):
        claims.same_as(con, U, "c_dup", "c_old", now=NOW)
    with pytest.raises(InvalidInput, match="same_as cycle"):
        claims.same_as(con, U, "c_old", "c_dup", now=NOW)


def test_same_as_chain_follows_to_the_end(seeded) -> None:
    con = seeded
    claim(con, U, "c_third", "Alice is based in Berlin")
    claims.same_as(con, U, "c_dup", "c_old", now=NOW)
    claims.same_as(con, U, "c_old", "c_third", now=NOW)
    assert claims.resolve(con, U, "c_dup") == ["c_dup", "c_old", "c_third"]
    assert claims.show_claim(con, U, "c_dup")["id"] == "c_third"


def test_retract_keeps_row(seeded) -> None:
    con = seeded
    res = claims.retract_claim(con, U, "c_old", reason="wrong", now=NOW)
    row = fact_row(con, U, "c_old")
    assert row["status"] == "retracted" and row["valid_to"] == NOW and row["text"] == "Alice lives in Berlin"
    assert events(con, U, "c_old") == [("retracted", "active", "retracted", None, res["run_id"])]
    with pytest.raises(InvalidInput, match="already retracted"):
        claims.retract_claim(con, U, "c_old", now=NOW)
    with pytest.raises(InvalidInput, match="claim_id: unknown"):
        claims.retract_claim(con, OTHER, "c_old", now=NOW)


def test_list_filters_and_privacy(seeded) -> None:
    con = seeded
    claim(con, U, "c_secret", "Alice's PIN is 1234", is_private=True)
    claim(con, U, "c_goal", "Alice wants to learn Rust", claim_type="goal")
    claims.retract_claim(con, U, "c_dup", now=NOW)
    ids = {r["id"] for r in claims.list_claims(con, U)}
    assert ids == {"c_old", "c_dup", "c_goal"}
    assert {r["id"] for r in claims.list_claims(con, U, include_private=True)} == ids | {"c_secret"}
    assert [r["id"] for r in claims.list_claims(con, U, status="retracted")] == ["c_dup"]
    assert [r["id"] for r in claims.list_claims(con, U, claim_type="goal")] == ["c_goal"]
    assert [r["id"] for r in claims.list_claims(con, OTHER)] == ["c_other"]
    with pytest.raises(InvalidInput, match="claim_id: unknown"):
        claims.show_claim(con, U, "c_secret")
