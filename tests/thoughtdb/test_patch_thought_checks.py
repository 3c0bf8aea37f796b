"""Thought-DB invariant checks: node/edge source_refs are tenant episodes; edge endpoints exist in the tenant."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

from engram.store import db
from engram.store.checks import check_rows, run_checks
from engram.thoughtdb import edges, nodes, patches
from tests.thought_seed import claim, episode

U, OTHER = "alice", "bob"
NOW = datetime(2026, 3, 1, 9, 0, 0)
REFS, ENDS = "thought_source_refs_are_episodes", "edge_endpoints_exist"


def _archive(con: db.Connection, table: str, row_id: str, user: str = U) -> None:
    """Move a row out through the archive bookkeeping: an open archive_rows entry, the live row gone."""
    con.execute("insert into archive_rows (user_id, table_name, row_id, export_id, archived_at) "
                "values (?, ?, ?, 'x1', ?)", [user, table, row_id, NOW])
    if table == "facts":
        con.execute("delete from fact_sources where user_id = ? and fact_id = ?", [user, row_id])
    con.execute(f"delete from {table} where user_id = ? and id = ?", [user, row_id])


def _raw_edge(con: db.Connection, edge_id: str, from_id: str, to_id: str, refs: list[str], user: str = U) -> None:
    con.execute("insert into edges (id, user_id, edge_type, from_id, to_id, source_refs) values (?, ?, 'supports', "
                "?, ?, ?)", [edge_id, user, from_id, to_id, refs])


def _raw_node(con: db.Connection, node_id: str, refs: list[str], user: str = U) -> None:
    con.execute("insert into nodes (id, user_id, node_type, title, asserted_at, source_refs) values (?, ?, "
                "'Decision', 't', ?, ?)", [node_id, user, NOW, refs])


@pytest.fixture
def clean(con: db.Connection) -> db.Connection:
    """Two tenants with nodes and edges made through the real API, one endpoint and one ref archived."""
    for user in (U, OTHER):
        episode(con, user, "ep1")
        episode(con, user, "ep2")
        episode(con, user, "ep_old")
        claim(con, user, "c1", sources=["ep1"])
        claim(con, user, "c2", sources=["ep2"])
        node = nodes.create_node(con, user, "Decision", "Pick DuckDB", ["ep1", "ep_old"], now=NOW)
        edges.create_edge(con, user, "depends_on", node, "c1", ["ep1"], now=NOW)
        edges.create_edge(con, user, "supports", "c2", node, ["ep2"], now=NOW)
        edges.create_edge(con, user, "mentions", node, "ep2", ["ep_old"], now=NOW)
    patches.apply_patch(con, U, {"id": "p", "ops": [
        {"op": "supersede", "claim_id": "c1", "text": "new", "source_refs": ["ep2"]},
        {"op": "create_summary", "title": "s", "covers": ["c2", "ep1"], "source_refs": ["ep1"]}]}, now=NOW)
    _archive(con, "episodes", "ep_old")  # archived episodes are still valid source_refs
    _archive(con, "facts", "c2", OTHER)  # an archived claim is still a valid endpoint
    return con


def test_clean_store_passes(clean: db.Connection) -> None:
    assert check_rows(clean, REFS).height == 0
    assert check_rows(clean, ENDS).height == 0
    assert set(run_checks(clean).values()) == {0}


def test_rollback_keeps_checks_clean(clean: db.Connection) -> None:
    patches.rollback_patch(clean, U, "p", now=NOW)
    assert check_rows(clean, REFS).height == 0 and check_rows(clean, ENDS).height == 0


def _restored_episode(con: db.Connection) -> None:
    # a restored archive entry no longer excuses a missing episode
    con.execute("update archive_rows set restored_at = ? where row_id = 'ep_old' and user_id = ?", [NOW, U])


Case = tuple[Callable[[db.Connection], None], str, list[tuple]]
REF_CASES: dict[str, Case] = {
    "node ref missing": (lambda c: _raw_node(c, "n_bad", ["ep1", "ep_nope"]), REFS,
                         [("nodes", U, "n_bad", "ep_nope", "episode missing")]),
    "edge ref of another tenant": (lambda c: (episode(c, OTHER, "ep_b"), _raw_edge(c, "g_bad", "c2", "ep1", ["ep_b"])),
                                   REFS, [("edges", U, "g_bad", "ep_b", "episode belongs to another tenant")]),
    "ref is a claim, not an episode": (lambda c: _raw_node(c, "n_c", ["c2"]), REFS,
                                       [("nodes", U, "n_c", "c2", "episode missing")]),
    "no refs": (lambda c: _raw_edge(c, "g_empty", "c2", "ep1", []), REFS,
                [("edges", U, "g_empty", None, "no source_refs")]),
    "archive entry restored": (_restored_episode, REFS, None),
    "endpoint missing": (lambda c: _raw_edge(c, "g_gone", "c2", "c_nope", ["ep1"]), ENDS,
                         [(U, "g_gone", "supports", "to_id", "c_nope", "endpoint missing")]),
    "endpoint of another tenant": (
        lambda c: (claim(c, OTHER, "c_b", sources=["ep1"]), _raw_edge(c, "g_x", "c_b", "ep1", ["ep1"])), ENDS,
        [(U, "g_x", "supports", "from_id", "c_b", "endpoint belongs to another tenant")]),
    "endpoint deleted, not archived": (
        lambda c: c.execute("delete from nodes where user_id = ? and node_type = 'Decision'", [OTHER]), ENDS, None),
}


@pytest.mark.parametrize("case", REF_CASES, ids=list(REF_CASES))
def test_violations_are_reported(clean: db.Connection, case: str) -> None:
    seed, check, expected = REF_CASES[case]
    seed(clean)
    got = check_rows(clean, check).rows()
    assert got, case
    if expected is not None:
        assert got == expected
    other = ENDS if check == REFS else REFS
    if case != "endpoint deleted, not archived":
        assert check_rows(clean, other).height == 0


def test_restored_and_deleted_cases_name_the_rows(clean: db.Connection) -> None:
    _restored_episode(clean)
    rows = check_rows(clean, REFS).rows()
    # bob still has an episode with that id, so the reason names the other tenant
    assert {(r[0], r[3], r[4]) for r in rows} == {("nodes", "ep_old", "episode belongs to another tenant"),
                                                  ("edges", "ep_old", "episode belongs to another tenant")}
    assert {r[1] for r in rows} == {U}
    clean.execute("delete from nodes where user_id = ? and node_type = 'Decision'", [OTHER])
    ends = check_rows(clean, ENDS).rows()
    assert {(r[0], r[3], r[5]) for r in ends} == {(OTHER, "from_id", "endpoint missing"),
                                                  (OTHER, "to_id", "endpoint missing")}
    assert len(ends) == 3  # depends_on and mentions leave from it; supports points to it
