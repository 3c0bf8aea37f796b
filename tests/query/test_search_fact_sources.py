"""Issue 45 #12: a fact found by search lists its source episodes, candidates or not (privacy kept)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa

from engram.query.search import search_memory
from engram.store import db
from tests.query_seed import T0, seed_episodes, seed_facts


def _link(con, fact_id: str, episode_ids: list[str], relation: str = "extracted_from") -> None:
    rows = [{"user_id": "u1", "fact_id": fact_id, "episode_id": e, "relation": relation, "similarity": None,
             "run_id": "seed"} for e in episode_ids]
    with db.registered(con, "incoming_sources", pa.Table.from_pylist(rows)):
        db.execute(con, "queries/store/insert_fact_sources")


def _seed(settings, con) -> None:
    # the sources share no word with the question, and a hundred turns that do outrank them: they are
    # not among the episodes the search ranked
    seed_episodes(settings, con, [
        {"id": "src1", "content": "Moved my boxes into the flat near Kreuzberg today", "created_at": T0.isoformat()},
        {"id": "src2", "content": "Signed the rental contract this morning",
         "created_at": (T0 + timedelta(days=1)).isoformat()},
        {"id": "secret", "content": "The landlord's door code is 4711", "is_private": True,
         "created_at": (T0 + timedelta(days=2)).isoformat()},
        {"id": "backs", "content": "Berlin is great for Lena", "created_at": (T0 + timedelta(days=3)).isoformat()},
        *({"id": f"noise{i}", "content": f"where does the neighbour {i} of Lena live and park",
           "created_at": (T0 + timedelta(hours=i)).isoformat()} for i in range(100)),
    ])
    seed_facts(settings, con, [{"id": "berlin", "text": "Lena lives in Berlin", "confidence": 0.9,
                                "created_at": T0 + timedelta(days=3), "confidence_at": datetime.now()}])
    _link(con, "berlin", ["src1", "src2", "secret"])
    _link(con, "berlin", ["backs"], relation="supports")


def test_a_fact_hit_lists_its_source_episodes(settings, con):
    _seed(settings, con)
    hits = search_memory("where does Lena live?", "facts", 1, "u1", settings=settings, con=con)
    assert [h.id for h in hits] == ["berlin"]
    sources = hits[0].to_dict()["sources"]
    assert [(s["id"], s["text"]) for s in sources] == [
        ("src1", "Moved my boxes into the flat near Kreuzberg today"),
        ("src2", "Signed the rental contract this morning"),
    ]
    assert sources[0]["created_at"] == T0.isoformat()


def test_a_private_source_is_shown_only_with_include_private(settings, con):
    _seed(settings, con)
    hits = search_memory("where does Lena live?", "facts", 1, "u1", settings=settings, con=con,
                         include_private=True)
    assert [s["id"] for s in hits[0].sources] == ["src1", "src2", "secret"]
