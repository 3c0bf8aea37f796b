"""Knowledge updates: a later fact with a different value supersedes the older one (no penalty, no review)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from engram.consolidate.context import StageContext
from engram.consolidate.runner import Tools, run_stage
from engram.embed.models import from_settings
from engram.query.search import search_memory
from engram.store import db, fact_ops
from engram.store.ingest import add_episodes

AS_OF = datetime(2026, 3, 1, 3, 0, 0)
USER = "u1"
OLD = "Alice lives in a flat in Lisbon near the river with her two cats"
NEW = "Alice lives in a flat in Porto near the river with her two cats"
MOVED = AS_OF - timedelta(days=20)


def _night(settings, run_id: str, as_of: datetime) -> dict:
    ctx = StageContext(settings, USER, run_id, as_of)
    tools = Tools(from_settings(settings))
    run_stage(ctx, "embed", tools)
    run_stage(ctx, "extract", tools)
    return run_stage(ctx, "confidence", tools).counts


def _episodes(settings, text: str, when: datetime, prefix: str) -> None:
    add_episodes([{"id": f"{prefix}-{i}", "user_id": USER, "content": text, "created_at": when + timedelta(minutes=i)}
                  for i in range(3)], settings)


def _facts(con) -> dict[str, tuple[str, str, datetime | None, datetime | None]]:
    rows = con.execute("select id, text, status, valid_from, valid_to from facts where user_id = $u",
                       {"u": USER}).fetchall()
    return {text: (fid, status, vf, vt) for fid, text, status, vf, vt in rows}


def test_later_value_supersedes_the_older_fact_and_as_of_still_finds_it(settings) -> None:
    _episodes(settings, OLD, AS_OF - timedelta(days=60), "old")
    _night(settings, "night-1", AS_OF - timedelta(days=59))
    _episodes(settings, NEW, MOVED, "new")
    counts = _night(settings, "night-2", AS_OF)
    assert counts["superseded"] == 1 and counts["contradictions"] == 0 and counts["penalised"] == 0
    with db.open_store(settings) as con:
        facts = _facts(con)
        old_id, old_status, _, old_valid_to = facts[OLD]
        new_id, new_status, new_valid_from, new_valid_to = facts[NEW]
        assert (old_status, new_status) == ("superseded", "active")
        assert old_valid_to == new_valid_from == MOVED and new_valid_to is None
        events = con.execute("select fact_id, action, related_fact_id, confidence_before = confidence_after"
                             " from fact_events where run_id = 'night-2' and action = 'superseded'").fetchall()
        assert events == [(old_id, "superseded", new_id, True)]  # superseded, not penalised
        assert con.execute("select count(*) from llm_reviews").fetchall() == [(0,)]
        now = search_memory("where does Alice live?", "facts", 5, USER, as_of=AS_OF, settings=settings, con=con)
        then = search_memory("where does Alice live?", "facts", 5, USER, as_of=MOVED - timedelta(days=1),
                             settings=settings, con=con)
    assert [h.text for h in now] == [NEW]
    assert [h.text for h in then] == [OLD]
    # reversible: reverting the run reactivates the older fact and clears its valid_to
    with db.open_store(settings) as con, db.transaction(con):
        fact_ops.revert_run(con, USER, "night-2", AS_OF + timedelta(hours=1))
        assert _facts(con)[OLD][1:] == ("active", facts[OLD][2], None)


def test_same_time_different_values_stay_a_contradiction(settings) -> None:
    _episodes(settings, OLD, MOVED, "old")
    _night(settings, "night-1", MOVED + timedelta(days=1))
    with db.open_store(settings) as con, db.transaction(con):
        # the same assertion time on both sides: the rules cannot tell which is current
        con.execute("update facts set valid_from = $t, asserted_at = $t", {"t": MOVED})
    _episodes(settings, NEW, MOVED, "new")
    with db.open_store(settings) as con, db.transaction(con):
        con.execute("update episodes set created_at = $t where id like 'new-%'", {"t": MOVED})
    counts = _night(settings, "night-2", AS_OF)
    assert counts["superseded"] == 0 and counts["contradictions"] == 1 and counts["penalised"] == 2
    with db.open_store(settings) as con:
        assert {s for _, s, _, _ in _facts(con).values()} == {"active"}
        assert con.execute("select kind, status from llm_reviews").fetchall() == [("contradiction", "pending")]


def test_search_shows_the_latest_restatement_of_a_value_in_place_of_the_older(settings) -> None:
    add_episodes([
        {"id": "e-old", "user_id": USER, "content": OLD, "created_at": AS_OF - timedelta(days=60)},
        {"id": "e-new", "user_id": USER, "content": NEW, "created_at": MOVED},
        {"id": "e-other", "user_id": USER, "content": "Bob plays the cello in an orchestra", "created_at": MOVED},
    ], settings)
    _night(settings, "night-1", AS_OF)  # embeds the episodes
    with db.open_reader(settings) as con:
        now = search_memory(f"{OLD}?", "episodes", 5, USER, as_of=AS_OF, settings=settings, con=con)
        then = search_memory(f"{OLD}?", "episodes", 5, USER, as_of=MOVED - timedelta(days=1),
                             settings=settings, con=con)
        top = search_memory(f"{OLD}?", "episodes", 1, USER, as_of=AS_OF, settings=settings, con=con)
    assert now[0].id == "e-new" and "e-old" not in [h.id for h in now]  # the older value gave up its slot
    assert [h.id for h in top] == ["e-new"]  # also when the older one filled the only slot first
    assert then[0].id == "e-old"


def test_a_value_that_comes_back_in_one_night_is_current_again(settings) -> None:
    start = AS_OF - timedelta(days=90)
    for n, (text, days) in enumerate(((OLD, 0), (NEW, 30), (OLD, 60))):  # Lisbon, Porto, Lisbon again
        add_episodes([{"id": f"e{n}", "user_id": USER, "content": text, "created_at": start + timedelta(days=days)}],
                     settings)
    _night(settings, "night-1", AS_OF)
    with db.open_store(settings) as con:
        rows = con.execute("select text, status, valid_from, valid_to from facts where user_id = $u"
                           " order by valid_from", {"u": USER}).fetchall()
        now = search_memory("where does Alice live?", "facts", 1, USER, as_of=AS_OF, settings=settings, con=con)
        between = search_memory("where does Alice live?", "facts", 1, USER, as_of=start + timedelta(days=45),
                                settings=settings, con=con)
    assert rows == [
        (OLD, "superseded", start, start + timedelta(days=30)),
        (NEW, "superseded", start + timedelta(days=30), start + timedelta(days=60)),
        (OLD, "active", start + timedelta(days=60), None),
    ]
    assert [h.text for h in now] == [OLD] and [h.text for h in between] == [NEW]


@pytest.mark.slow
def test_a_value_that_comes_back_on_a_later_night_is_a_new_current_fact(settings) -> None:
    _episodes(settings, OLD, AS_OF - timedelta(days=60), "old")
    _night(settings, "night-1", AS_OF - timedelta(days=59))
    _episodes(settings, NEW, MOVED, "new")
    _night(settings, "night-2", MOVED + timedelta(days=1))
    _episodes(settings, OLD, AS_OF - timedelta(days=2), "back")
    _night(settings, "night-3", AS_OF)
    with db.open_store(settings) as con:
        statuses = sorted(con.execute("select text, status from facts where user_id = $u", {"u": USER}).fetchall())
    assert statuses == sorted([(OLD, "superseded"), (NEW, "superseded"), (OLD, "active")])
