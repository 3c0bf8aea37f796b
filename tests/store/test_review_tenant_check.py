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
