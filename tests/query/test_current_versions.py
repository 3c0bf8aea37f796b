"""The version of a superseded fact in force now, and the episodes of the versions a fact replaced."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.consolidate.runner import STAGES, run_tenant
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes

T0 = (datetime.now() - timedelta(days=120)).replace(hour=9, minute=0, second=0, microsecond=0)


def test_a_chain_of_counted_updates_leads_to_the_current_fact(settings: Settings) -> None:
    said = ["My Zotero library has 45 sources on film theory.", "My Zotero library now has 52 sources on film theory.",
            "My Zotero library has grown to 60 sources on film theory."]
    add_episodes([{"id": f"e{i}", "user_id": "u", "role": "user", "session_id": f"s{i}", "content": text,
                   "created_at": (T0 + timedelta(days=20 * i)).isoformat()} for i, text in enumerate(said)], settings)
    for i in range(3):  # one night after each message: each new count supersedes the one before
        run_tenant(settings, "u", f"run-{i}", T0 + timedelta(days=20 * i + 1), list(STAGES))
    with db.open_store(settings) as con:
        facts = dict(con.execute("select text, id from facts where user_id = 'u'").fetchall())
        status = dict(con.execute("select id, status from facts where user_id = 'u'").fetchall())
        old, mid, new = (facts[f"The user's Zotero library {t}"] for t in (
            "has 45 sources on film theory.", "now has 52 sources on film theory.",
            "has grown to 60 sources on film theory."))
        assert [status[old], status[mid], status[new]] == ["superseded", "superseded", "active"]
        current = db.rows(con, "queries/query/current_fact_versions", user_id="u", fact_ids=[old, mid])
        replaced = db.rows(con, "queries/query/replaced_fact_source_episodes", user_id="u", fact_ids=[new],
                           include_private=False, per_fact=10)
    assert sorted(current) == sorted([(old, new), (mid, new)])
    assert [(f, e) for f, e, *_ in replaced] == [(new, "e0"), (new, "e1")]
