"""A later count of the same thing supersedes the earlier one; other numbers and subjects do not."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.consolidate.context import StageContext
from engram.consolidate.count_updates import count_update, counts
from engram.consolidate.runner import Tools, run_stage
from engram.embed.models import from_settings
from engram.store import db
from engram.store.ingest import add_episodes

T0 = datetime(2024, 3, 15, 9, 0)


def test_counts_read_the_number_and_what_it_counts() -> None:
    assert counts("The user's Zotero library has 45 sources and 1,200 notes, up 40% since May 3") == {
        "sourc": "45", "not": "1200", "%": "40"}  # suffix stems: crude, the same on both sides


def test_count_update_needs_the_same_thing_subject_and_context() -> None:
    assert count_update("The user's Zotero library has 45 sources, tagged by theme",
                        "The user has added 52 sources to the user's Zotero library")
    assert not count_update("Caroline has 3 kids", "Caroline read 5 books")
    assert not count_update("Melanie has 2 dogs at home", "Caroline has 3 dogs at home")
    assert not count_update("The library has 45 sources", "The library has 45 sources now")


def test_the_later_count_supersedes_the_earlier(settings) -> None:
    add_episodes([
        {"id": "e0", "user_id": "u", "session_id": "s", "role": "user", "created_at": T0,
         "content": "My Zotero library has 45 sources tagged by theme."},
        {"id": "e1", "user_id": "u", "session_id": "s", "role": "user", "created_at": T0 + timedelta(days=30),
         "content": "I've added 52 sources to my Zotero library tagged by theme."},
    ], settings)
    ctx = StageContext(settings, "u", "r1", T0 + timedelta(days=31))
    tools = Tools(from_settings(settings))
    for stage in ("embed", "extract", "confidence"):
        run_stage(ctx, stage, tools)
    with db.open_reader(settings) as con:
        rows = con.execute("select f.text, f.status, f.valid_to, e.action from facts f left join fact_events e "
                           "on e.user_id = f.user_id and e.fact_id = f.id and e.action = 'superseded' "
                           "where f.user_id = 'u' order by f.valid_from").fetchall()
    assert [(status, valid_to, action) for _, status, valid_to, action in rows] == [
        ("superseded", T0 + timedelta(days=30), "superseded"), ("active", None, None)]
