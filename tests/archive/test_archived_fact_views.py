"""A fact the nightly archive took keeps its words: run changes, fact_history, explain and review list."""

from __future__ import annotations

import pytest

from engram.consolidate.report import change_rows
from engram.consolidate.resolve import list_reviews
from engram.consolidate.runner import Tools, run_tenant
from engram.embed.models import from_settings
from engram.query.explain import explain_fact, format_explanation
from engram.store import db
from engram.store.snapshot import open_snapshot, publish_snapshot
from tests.archive_scenario import AS_OF, USER, seed

RUN = "run-archive-text"


@pytest.fixture
def archived(settings):
    """The scenario after a night that ran archive and publish (f_dep_old and f_rm leave the live table)."""
    seed(settings)
    with db.open_store(settings) as con:
        con.execute("insert into llm_reviews (id, user_id, kind, subject_ids, reason, created_at) "
                    "values ('rv1', $u, 'contradiction', ['f_dep_old', 'f_active'], 'test', $t)",
                    {"u": USER, "t": AS_OF})
    out = run_tenant(settings, USER, RUN, AS_OF, ("archive", "publish"), Tools(from_settings(settings)))
    assert out["archive"].counts["archived_facts"] >= 2
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from facts where id = 'f_dep_old'").fetchall() == [(0,)]
    return settings, {stage: r.summary() for stage, r in out.items()}


def test_run_changes_and_artifact_rows_keep_archived_text(archived) -> None:
    _, results = archived
    changes = {c["fact_id"]: c for c in results["publish"]["changes"] if c["action"] == "archived"}
    assert changes["f_dep_old"]["text"] == f"fact f_dep_old of {USER}"
    rows = {r["fact"]: r for r in change_rows({USER: results})}
    assert rows["f_dep_old"]["text"] == f"fact f_dep_old of {USER}"
    assert all(r["text"] for r in rows.values())


def test_fact_history_in_the_snapshot_keeps_archived_text(archived) -> None:
    settings, _ = archived
    publish_snapshot(settings, RUN)
    with open_snapshot(settings) as con:
        texts = con.execute("select distinct fact_text from fact_history where fact_id = 'f_dep_old'").fetchall()
    assert texts == [(f"fact f_dep_old of {USER}",)]


def test_explain_an_archived_fact_says_so_and_how_to_restore(archived) -> None:
    settings, _ = archived
    info = explain_fact(settings, USER, "f_dep_old", read_only=True)
    assert info["fact"]["status"] == "archived" and info["fact"]["text"] == f"fact f_dep_old of {USER}"
    assert info["archived"]["archive_run_id"] == RUN and info["archived"]["status_before"] == "deprecated"
    assert info["archived"]["restore"] == "engram restore --user u1 f_dep_old"
    assert "archived" in [e["action"] for e in info["events"]]
    text = "\n".join(format_explanation(info))
    assert "archived on" in text and "engram restore --user u1 f_dep_old" in text
    with pytest.raises(Exception, match="unknown fact"):
        explain_fact(settings, USER, "no_such_fact", read_only=True)


def test_review_list_shows_archived_facts_text(archived) -> None:
    settings, _ = archived
    [review] = [r for r in list_reviews(settings, USER) if r["id"] == "rv1"]
    facts = {f["id"]: f for f in review["facts"]}
    assert facts["f_dep_old"] == {"id": "f_dep_old", "text": f"fact f_dep_old of {USER}", "status": "archived",
                                  "confidence": 0.42, "archived": True}
    assert facts["f_active"]["status"] == "active"
