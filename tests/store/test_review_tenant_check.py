"""The reviews_within_tenant check: a review naming another tenant's fact is a violation."""

from __future__ import annotations

from engram.store.checks import check_rows


def _fact(con, user: str, fid: str) -> None:
    con.execute(
        "insert into facts (id, user_id, text, confidence, asserted_at, created_at, last_updated,"
        " last_reinforced_at, content_hash) values ($id, $u, 'x', 0.5, now(), now(), now(), now(), 'h')",
        {"id": fid, "u": user},
    )


def _review(con, user: str, rid: str, ids: list[str], kind: str = "contradiction") -> None:
    con.execute(
        "insert into llm_reviews (id, user_id, kind, subject_ids, created_at) values ($id, $u, $k, $s, now())",
        {"id": rid, "u": user, "k": kind, "s": ids},
    )


def test_review_naming_another_tenants_fact_is_reported(con) -> None:
    _fact(con, "a", "fa")
    _fact(con, "b", "fb")
    _review(con, "a", "ok", ["fa"])
    assert check_rows(con, "reviews_within_tenant").height == 0
    _review(con, "a", "bad", ["fa", "fb"])
    rows = check_rows(con, "reviews_within_tenant").to_dicts()
    assert rows == [{"user_id": "a", "review_id": "bad", "subject_id": "fb"}]


def test_a_review_naming_a_fact_its_tenant_archived_passes(con) -> None:
    _fact(con, "a", "fa")
    _review(con, "a", "r1", ["fa", "f_gone"])
    _review(con, "b", "r2", ["f_gone"])  # another tenant's archive does not vouch for it
    con.execute("insert into archive_rows (user_id, table_name, row_id, export_id, archived_at)"
                " values ('a', 'facts', 'f_gone', 'x1', now())")
    rows = check_rows(con, "reviews_within_tenant").to_dicts()
    assert rows == [{"user_id": "b", "review_id": "r2", "subject_id": "f_gone"}]
