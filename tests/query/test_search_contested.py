"""Issue 45 #3: a fact a pending contradiction review names is marked contested in search and context."""

from __future__ import annotations

from datetime import datetime

from engram.consolidate.context import StageContext, new_review, queue_reviews
from engram.query.passive import build_context, memory_records
from engram.query.render import hit_line
from engram.query.search import search_memory
from tests.query_seed import T0, seed_facts


def _seed(settings, con, review_status: str = "pending") -> None:
    # a contested pair of preferences, each halved by the contradiction (0.5 -> 0.25): preferences are
    # current until revoked, so both stay visible to active search, side by side, not folded as restatements
    seed_facts(settings, con, [
        {"id": "likes", "text": "The user likes spicy food", "confidence": 0.25, "claim_type": "preference"},
        {"id": "dislikes", "text": "The user does not like spicy food", "confidence": 0.25,
         "claim_type": "preference"},
        {"id": "cat", "text": "The user has a spicy tempered cat", "confidence": 0.8, "confidence_at": datetime.now()},
    ])
    ctx = StageContext(settings, "u1", "night-1", T0)
    queue_reviews(con, [new_review(ctx, "contradiction", ["dislikes", "likes"], "negation; cos 0.900")])
    con.execute("update llm_reviews set status = $s", {"s": review_status})


def test_a_fact_with_a_pending_contradiction_review_is_contested(settings, con) -> None:
    _seed(settings, con)
    hits = {h.id: h for h in search_memory("does the user like spicy food?", "facts", 5, "u1", settings=settings,
                                           con=con)}
    assert {"likes", "dislikes", "cat"} <= hits.keys()
    assert hits["likes"].to_dict()["contested"] is True and hits["dislikes"].contested
    assert hits["cat"].to_dict()["contested"] is False
    assert "contested" in hit_line(hits["likes"]) and "contested" not in hit_line(hits["cat"])
    # the agent's context says so too
    records = memory_records([hits["likes"], hits["cat"]])
    assert records[0]["contested"] is True and "contested" not in records[1]
    assert '"contested": true' in build_context(["spicy?"], memories=[hits["likes"]])["text"]


def test_an_applied_review_settles_the_dispute(settings, con) -> None:
    _seed(settings, con, review_status="applied")
    hits = search_memory("does the user like spicy food?", "facts", 5, "u1", settings=settings, con=con)
    assert hits and not any(h.contested for h in hits)


def test_an_episode_that_states_a_contested_fact_is_contested(settings, con) -> None:
    import pyarrow as pa

    from engram.store import db
    from tests.query_seed import seed_episodes

    _seed(settings, con)
    seed_episodes(settings, con, [{"id": "said-like", "content": "I like spicy food."},
                                  {"id": "said-cat", "content": "My cat has a spicy temper."}])
    rows = [{"user_id": "u1", "fact_id": f, "episode_id": e, "relation": "extracted_from", "similarity": None,
             "run_id": "seed"} for f, e in (("likes", "said-like"), ("cat", "said-cat"))]
    with db.registered(con, "incoming_sources", pa.Table.from_pylist(rows)):
        db.execute(con, "queries/store/insert_fact_sources")
    hits = {h.id: h for h in search_memory("spicy", "episodes", 5, "u1", settings=settings, con=con)}
    assert hits["said-like"].contested and not hits["said-cat"].contested
    assert memory_records([hits["said-like"]])[0]["contested"] is True


def test_a_plain_fact_halved_by_a_pending_dispute_stays_visible_contested(settings, con) -> None:
    """A fact (not a preference) halved below the search floor by a contradiction is shown, contested, while
    its review waits; once the review is applied, or in passive context, or when halving cannot explain how
    low it is, it is not."""
    now = datetime.now()
    seed_facts(settings, con, [
        {"id": "lives", "text": "Ann lives in Lisbon", "confidence": 0.25, "confidence_at": now},
        {"id": "not", "text": "Ann does not live in Lisbon", "confidence": 0.25, "confidence_at": now},
        {"id": "faded", "text": "Ann lives near Lisbon airport", "confidence": 0.1, "confidence_at": now},
    ])
    ctx = StageContext(settings, "u1", "night-1", T0)
    queue_reviews(con, [new_review(ctx, "contradiction", ["lives", "not", "faded"], "negation; cos 0.900")])
    hits = {h.id: h for h in search_memory("where does Ann live?", "facts", 5, "u1", settings=settings, con=con)}
    assert set(hits) == {"lives", "not"} and all(h.contested for h in hits.values())
    passive = search_memory("where does Ann live?", "facts", 5, "u1", settings=settings, con=con, mode="passive")
    assert passive == []
    con.execute("update llm_reviews set status = 'applied'")
    assert search_memory("where does Ann live?", "facts", 5, "u1", settings=settings, con=con) == []
