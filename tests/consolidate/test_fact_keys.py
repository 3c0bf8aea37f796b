"""Derived fact keys: each active fact keyed once, lookups by key, re-keying after a rule change."""

from __future__ import annotations

from datetime import datetime

from engram.consolidate import fact_keys
from engram.store import db

T = datetime(2026, 3, 1, 3, 0)


def _fact(con, fid: str, text: str, user: str = "u1", status: str = "active") -> None:
    con.execute(
        "insert into facts (id, user_id, text, confidence, confidence_at, asserted_at, created_at, last_updated,"
        " last_reinforced_at, content_hash, status) values ($id, $u, $t, 0.5, $at, $at, $at, $at, $at, $id, $s)",
        {"id": fid, "u": user, "t": text, "at": T, "s": status})


def _keys(con) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in con.execute(
        "select id, statement_key, frame_key, keys_version, changed_at from facts").fetchall()}


def test_refresh_keys_each_active_fact_once_and_leaves_the_change_mark(con) -> None:
    _fact(con, "a", "Ann lives in Lisbon.")
    _fact(con, "b", "Ann went to Paris last year.")
    _fact(con, "gone", "Ann lives in Rome.", status="merged")
    before = _keys(con)
    assert fact_keys.refresh(con, "u1") == 2
    keys = _keys(con)
    assert keys["a"][:3] == ("ann lives in lisbon", "ann lives ?", fact_keys.KEYS_VERSION)
    assert keys["b"][1:3] == ("", fact_keys.KEYS_VERSION)  # a past event has no frame to update
    assert keys["gone"][2] is None  # not active: not keyed
    assert keys["a"][3] == before["a"][3]  # keys are no search column
    assert fact_keys.refresh(con, "u1") == 0


def test_a_fact_keyed_by_an_older_rule_is_keyed_again(con) -> None:
    _fact(con, "a", "Ann lives in Lisbon.")
    fact_keys.refresh(con, "u1")
    con.execute("update facts set keys_version = 0, frame_key = 'stale' where id = 'a'")
    assert fact_keys.refresh(con, "u1") == 1
    assert _keys(con)["a"][1] == "ann lives ?"


def test_known_statements_are_those_an_active_fact_of_the_tenant_makes(con) -> None:
    _fact(con, "a", "Ann lives in Lisbon.")
    _fact(con, "b", "Bob plays chess.", user="u2")
    _fact(con, "c", "Ann plays golf.", status="superseded")
    got = fact_keys.known_statements(con, "u1", ["ann lives in lisbon", "bob plays chess", "ann plays golf", "x"])
    assert got == {"ann lives in lisbon"}
    assert fact_keys.known_statements(con, "u1", []) == set()


def test_facts_sharing_frames_returns_only_the_frames_asked_for(con) -> None:
    _fact(con, "a", "Ann lives in Lisbon.")
    _fact(con, "b", "Ann lives in Porto.")
    _fact(con, "c", "Bob lives in Porto.")
    _fact(con, "d", "Ann lives in Rome.", user="u2")
    _fact(con, "e", "Ann went to Paris.")  # no frame: never returned, even when asked for
    rows = fact_keys.facts_sharing_frames(con, "u1", ["b", "e"])
    assert [(fid, text) for fid, text, _ in rows] == [("a", "Ann lives in Lisbon."), ("b", "Ann lives in Porto.")]
    assert fact_keys.facts_sharing_frames(con, "u1", ["e"]) == []
    with db.transaction(con):
        con.execute("update facts set status = 'superseded' where id = 'a'")
    assert [r[0] for r in fact_keys.facts_sharing_frames(con, "u1", ["b"])] == ["b"]


def test_without_storing_unkeyed_facts_are_keyed_in_memory_and_nothing_is_written(con) -> None:
    # a dry run writes nothing: the lookups key what is not keyed yet for their own answer only
    _fact(con, "a", "Ann lives in Lisbon.")
    _fact(con, "b", "Ann lives in Porto.")
    _fact(con, "c", "Bob lives in Porto.")
    fact_keys.refresh(con, "u1")
    _fact(con, "d", "Ann lives in Rome.")  # stored after the last keying
    _fact(con, "e", "Ann plays golf.")
    assert fact_keys.known_statements(con, "u1", ["ann plays golf", "ann lives in lisbon", "x"], store=False) == {
        "ann plays golf", "ann lives in lisbon"}
    rows = fact_keys.facts_sharing_frames(con, "u1", ["d"], store=False)
    assert [r[0] for r in rows] == ["a", "b", "d"]
    assert [r[0] for r in fact_keys.facts_sharing_frames(con, "u1", ["c"], store=False)] == ["c"]
    assert fact_keys.facts_sharing_frames(con, "u1", ["e"], store=False) == []
    assert {k: v[2] for k, v in _keys(con).items() if k in "de"} == {"d": None, "e": None}
    # storing gives the same answers and keys them
    assert [r[0] for r in fact_keys.facts_sharing_frames(con, "u1", ["d"])] == ["a", "b", "d"]
    assert _keys(con)["d"][2] == fact_keys.KEYS_VERSION


def test_refresh_stores_each_facts_valence_code(con) -> None:
    from engram.consolidate.pair_rules import valence_code

    texts = {"a": "Ann doesn't live in Lisbon anymore.", "b": "Ann lives in 3 cities.", "c": "we went out"}
    for fid, text in texts.items():
        _fact(con, fid, text)
    fact_keys.refresh(con, "u1")
    codes = dict(con.execute("select id, valence_code from facts").fetchall())
    assert codes == {fid: valence_code(text) for fid, text in texts.items()}
    assert codes["a"] >> 4 == 1 and codes["a"] & 1 and codes["a"] & 2  # one negation, an end, a name
    assert codes["b"] & 4 and not codes["b"] & 1  # a number
    assert codes["c"] == 0
