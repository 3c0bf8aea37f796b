"""Invariant checks (sql/checks): each returns nothing on a clean seed and the bad rows on a broken one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engram.store import db
from engram.store.checks import check_names, check_rows, run_checks

FACT = (
    "insert into facts (id, user_id, text, confidence, status, merged_into_id, asserted_at, created_at, "
    "last_updated, last_reinforced_at, content_hash, embedding, embedding_model, embedding_dim) values "
    "($id, $user, 'text', $conf, $status, $merged, now(), now(), now(), now(), 'h', $emb, $model, $dim)"
)
EPISODE = (
    "insert into episodes (id, user_id, content, created_at, content_hash, embedding, embedding_model, "
    "embedding_dim, status) values ($id, $user, 'c', now(), 'h', $emb, $model, $dim, $status)"
)
SOURCE = (
    "insert into fact_sources (user_id, fact_id, episode_id, relation) values ($user, $fact, $ep, 'extracted_from')"
)


def fact(con: db.Connection, fid: str, user: str = "u", conf: float = 0.5, status: str = "active",
         merged: str | None = None, emb: list[float] | None = None, model: str | None = None,
         dim: int | None = None) -> None:
    con.execute(FACT, {"id": fid, "user": user, "conf": conf, "status": status, "merged": merged,
                       "emb": emb, "model": model, "dim": dim})


def episode(con: db.Connection, eid: str, user: str = "u", emb: list[float] | None = None,
            model: str | None = None, dim: int | None = None) -> None:
    con.execute(EPISODE, {"id": eid, "user": user, "emb": emb, "model": model, "dim": dim,
                          "status": "active" if emb else "pending_embed"})


def source(con: db.Connection, fid: str, eid: str, user: str = "u") -> None:
    con.execute(SOURCE, {"user": user, "fact": fid, "ep": eid})


def clean_seed(con: db.Connection) -> None:
    """Two tenants, merged facts, vectors of the right shape, every fact sourced."""
    for user in ("u", "v"):
        episode(con, "e1", user, emb=[0.5] * 4, model="m", dim=4)
        episode(con, "e2", user)
        fact(con, "f1", user, conf=1.0, emb=[0.1] * 4, model="m", dim=4)
        fact(con, "f2", user, conf=0.0, status="merged_into", merged="f1")
        source(con, "f1", "e1", user)
        source(con, "f2", "e2", user)
    con.execute(
        "insert into fact_events (id, user_id, fact_id, run_id, action, confidence_before, confidence_after, "
        "created_at) values ('ev1', 'u', 'f1', 'r1', 'reinforced', 0.5, 0.55, now())"
    )


def test_the_checks_are_the_ones_documented() -> None:
    assert {
        "facts_have_sources", "merged_into_points_to_existing", "confidence_in_range",
        "no_cross_tenant_links", "episodes_embedding_dim_matches", "facts_embedding_dim_matches",
        "thought_source_refs_are_episodes", "edge_endpoints_exist",
    } <= set(check_names())


def test_empty_and_clean_stores_pass_every_check(con: db.Connection) -> None:
    assert set(run_checks(con).values()) == {0}
    clean_seed(con)
    assert run_checks(con) == dict.fromkeys(check_names(), 0)


def _unsourced(con: db.Connection) -> None:
    fact(con, "lonely")


def _source_elsewhere(con: db.Connection) -> None:
    fact(con, "f3", "u")
    source(con, "f3", "e1", "v")  # v's source row for u's fact id: not f3 of tenant u


def _merged_without_target(con: db.Connection) -> None:
    fact(con, "m1", status="merged_into", merged=None)
    source(con, "m1", "e1")


def _merged_into_missing(con: db.Connection) -> None:
    fact(con, "m2", status="merged_into", merged="nope")
    source(con, "m2", "e1")


def _merged_into_self(con: db.Connection) -> None:
    fact(con, "m3", status="merged_into", merged="m3")
    source(con, "m3", "e1")


def _merged_into_other_tenant(con: db.Connection) -> None:
    fact(con, "only_v", "v")
    source(con, "only_v", "e1", "v")
    fact(con, "m4", "u", status="merged_into", merged="only_v")
    source(con, "m4", "e1", "u")


def _confidence(value: float) -> Callable[[db.Connection], None]:
    def seed(con: db.Connection) -> None:
        fact(con, "c1", conf=value)
        source(con, "c1", "e1")
    return seed


def _event_confidence(con: db.Connection) -> None:
    con.execute(
        "insert into fact_events (id, user_id, fact_id, run_id, action, confidence_before, confidence_after, "
        "created_at) values ('ev9', 'u', 'f1', 'r1', 'decayed', 0.5, -0.1, now())"
    )


def _kg_candidate_confidence(con: db.Connection) -> None:
    con.execute(
        "insert into kg_entity_candidates (id, user_id, name, norm_name, confidence, source_thought_id) "
        "values ('k1', 'u', 'Paris', 'paris', 2.0, 'e1')"
    )


def _source_to_other_tenants_episode(con: db.Connection) -> None:
    episode(con, "only_in_v", "v")
    source(con, "f1", "only_in_v", "u")


def _source_to_missing_episode(con: db.Connection) -> None:
    source(con, "f1", "ghost", "u")


def _source_to_missing_fact(con: db.Connection) -> None:
    source(con, "ghost_fact", "e1", "u")


def _episode_wrong_len(con: db.Connection) -> None:
    episode(con, "bad", emb=[0.1] * 3, model="m", dim=4)


def _episode_vector_without_model(con: db.Connection) -> None:
    episode(con, "bad2", emb=[0.1] * 4, model=None, dim=4)


def _episode_dim_without_vector(con: db.Connection) -> None:
    episode(con, "bad3", emb=None, model="m", dim=4)


def _fact_wrong_len(con: db.Connection) -> None:
    fact(con, "fv", emb=[0.1] * 5, model="m", dim=4)
    source(con, "fv", "e1")


CASES = [
    ("facts_have_sources", _unsourced, [("u", "lonely", "active")]),
    ("facts_have_sources", _source_elsewhere, [("u", "f3", "active")]),
    ("merged_into_points_to_existing", _merged_without_target, [("u", "m1", "merged_into without a target")]),
    ("merged_into_points_to_existing", _merged_into_missing, [("u", "m2", "target fact missing in this tenant")]),
    ("merged_into_points_to_existing", _merged_into_self, [("u", "m3", "merged into itself")]),
    ("merged_into_points_to_existing", _merged_into_other_tenant,
     [("u", "m4", "target fact missing in this tenant")]),
    ("confidence_in_range", _confidence(1.5), [("facts", "u", "c1")]),
    ("confidence_in_range", _confidence(-0.01), [("facts", "u", "c1")]),
    ("confidence_in_range", _confidence(float("nan")), [("facts", "u", "c1")]),
    ("confidence_in_range", _event_confidence, [("fact_events", "u", "ev9")]),
    ("confidence_in_range", _kg_candidate_confidence, [("kg_entity_candidates", "u", "k1")]),
    ("no_cross_tenant_links", _source_to_other_tenants_episode,
     [("u", "f1", "only_in_v", "episode belongs to another tenant")]),
    ("no_cross_tenant_links", _source_to_missing_episode, [("u", "f1", "ghost", "episode missing")]),
    ("no_cross_tenant_links", _source_to_missing_fact, [("u", "ghost_fact", "e1", "fact missing")]),
    ("no_cross_tenant_links", _source_elsewhere, [("v", "f3", "e1", "fact belongs to another tenant")]),
    ("episodes_embedding_dim_matches", _episode_wrong_len, [("u", "bad", 4, 3)]),
    ("episodes_embedding_dim_matches", _episode_vector_without_model, [("u", "bad2", 4, 4)]),
    ("episodes_embedding_dim_matches", _episode_dim_without_vector, [("u", "bad3", 4, None)]),
    ("facts_embedding_dim_matches", _fact_wrong_len, [("u", "fv", 4, 5)]),
]

KEYS = {
    "facts_have_sources": ("user_id", "id", "status"),
    "merged_into_points_to_existing": ("user_id", "id", "reason"),
    "confidence_in_range": ("table_name", "user_id", "id"),
    "no_cross_tenant_links": ("user_id", "fact_id", "episode_id", "reason"),
    "episodes_embedding_dim_matches": ("user_id", "id", "embedding_dim", "embedding_len"),
    "facts_embedding_dim_matches": ("user_id", "id", "embedding_dim", "embedding_len"),
}


@pytest.mark.parametrize(("name", "breaker", "expected"), CASES,
                         ids=[f"{c[0]}-{c[1].__name__}" for c in CASES])
def test_each_check_reports_exactly_the_broken_rows(
    con: db.Connection, name: str, breaker: Callable[[db.Connection], None], expected: list[tuple]
) -> None:
    clean_seed(con)
    breaker(con)
    got = check_rows(con, name).select(KEYS[name]).rows()
    assert got == expected
    counts = run_checks(con)
    assert counts[name] == len(expected)


def test_an_archived_episode_is_not_a_missing_source(con: db.Connection) -> None:
    clean_seed(con)
    con.execute("delete from fact_sources where user_id = 'u' and episode_id = 'e2'")
    con.execute("delete from episodes where user_id = 'u' and id = 'e2'")
    source(con, "f2", "e2", "u")
    assert check_rows(con, "no_cross_tenant_links").height == 1
    con.execute(
        "insert into archive_rows (user_id, table_name, row_id, export_id, archived_at) "
        "values ('u', 'episodes', 'e2', 'x1', now())"
    )
    assert check_rows(con, "no_cross_tenant_links").height == 0
