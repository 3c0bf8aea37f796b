"""'Never' contradictions: linked for review, both kept at their confidence."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.consolidate.context import StageContext
from engram.consolidate.never import never_contradiction, says_never
from engram.consolidate.runner import Tools, run_stage
from engram.embed.models import from_settings
from engram.store import db
from engram.store.ingest import add_episodes

T0 = datetime(2024, 3, 15, 9, 0)


def test_never_against_a_statement_of_the_same_predicate() -> None:
    assert never_contradiction("The user has never submitted the cover letter to Greg for review",
                               "The user submitted the cover letter to Greg for review on April 10")
    assert never_contradiction("The user attended a workshop on resume standards on May 3",
                               "The user has never attended any workshops on resume standards")
    assert not never_contradiction("Caroline has never been to Paris", "Melanie went to Paris last year")
    assert not never_contradiction("Caroline has never been to Paris", "Caroline loves Paris in spring")
    assert not never_contradiction("The user has never met Greg", "The user didn't meet Greg at the fair")
    assert not never_contradiction("The user never skips breakfast", "The user never skips lunch")
    assert says_never("I've never met Michael") and not says_never("I never said I don't like it")
    assert says_never("I don't see why I have never practiced these problems")


def test_the_night_links_never_and_keeps_both(settings) -> None:
    # cosine ~0.46 with the hash embedder: below the negation rule's floor, above the never rule's
    add_episodes([
        {"id": "e0", "user_id": "u", "session_id": "s", "role": "user", "created_at": T0,
         "content": "I took a writing class with Bryan at the film festival in Cannes."},
        {"id": "e1", "user_id": "u", "session_id": "s", "role": "user", "created_at": T0 + timedelta(days=20),
         "content": "I've never met Bryan at any film festival."},
    ], settings)
    ctx = StageContext(settings, "u", "r1", T0 + timedelta(days=21))
    tools = Tools(from_settings(settings))
    for stage in ("embed", "extract", "confidence"):
        run_stage(ctx, stage, tools)
    with db.open_reader(settings) as con:
        facts = dict(con.execute("select id, status from facts where user_id = 'u'").fetchall())
        reviews = con.execute("select subject_ids, reason from llm_reviews where user_id = 'u' "
                              "and kind = 'contradiction'").fetchall()
        events = con.execute("select fact_id, related_fact_id, confidence_before = confidence_after from fact_events "
                             "where user_id = 'u' and action = 'contradicted'").fetchall()
    assert set(facts.values()) == {"active"} and len(facts) == 2
    assert [(sorted(ids), why.split(":")[0]) for ids, why in reviews] == [(sorted(facts), "never")]
    assert sorted((a, b) for a, b, _ in events) == sorted([tuple(sorted(facts)), tuple(sorted(facts))[::-1]])
    assert all(same for *_, same in events)
