"""A seeded tenant for consolidation tests: duplicates, a contradiction, a stale fact, support.

Expected values are computed here from the documented formulas with plain math, independently
of engram.consolidate.scoring, so a wrong implementation cannot agree with itself.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pyarrow as pa

from engram.embed.models import HashEmbedder
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes
from engram.text.normalize import content_hash

AS_OF = datetime(2026, 3, 1, 3, 0, 0)
USER = "u1"
OTHER = "u2"
GAIN, RATE = 0.05, 0.002  # the defaults of support_gain and decay_rate

SEED_FACTS = {
    # id: (text, confidence, days since confidence_at, evidence_count)
    "f_alice": ("Alice works at Acme Corp as a senior engineer", 0.8, 10, 4),
    "f_coffee": ("Bob drinks his coffee black every morning", 0.7, 5, 3),
    "f_stale": ("Carol used to collect stamps from Peru", 0.35, 100, 1),  # 0.35 e^(-0.2) < 0.3
}
NEW_EPISODES = [
    "alice works at acme corp as senior engineer",
    "alice works at acme corp as senior engineer",
    "alice works at acme corp as senior engineer",
    "alice works at acme corp as senior engineer",
    "Bob never drinks his coffee black every morning",
    "Bob never drinks his coffee black every morning",
    "Bob never drinks his coffee black every morning",
    "Dana is training for the Boston marathon in April",
    "Dana is training for the Boston marathon in April",
    "Dana is training for the Boston marathon in April",
]


def seed(settings: Settings) -> None:
    """Seed facts (each with a source episode) and the night's new episodes, plus another tenant."""
    emb = HashEmbedder(settings.embed_dim)
    seed_eps = [
        {"id": f"seed-{fid}", "user_id": USER, "content": text, "created_at": AS_OF - timedelta(days=40)}
        for fid, (text, *_rest) in SEED_FACTS.items()
    ]
    add_episodes(seed_eps, settings, embeddings=emb.embed([e["content"] for e in seed_eps]),
                 embedding_model=emb.model)
    new_eps = [
        {"id": f"new-{i}", "user_id": USER, "content": text, "created_at": AS_OF - timedelta(days=1, minutes=i)}
        for i, text in enumerate(NEW_EPISODES)
    ]
    add_episodes(new_eps, settings)
    add_episodes([{"id": "other-1", "user_id": OTHER, "content": "Alice works at Acme Corp as a senior engineer",
                   "created_at": AS_OF - timedelta(days=2)}], settings)
    texts = [t for t, *_ in SEED_FACTS.values()]
    vecs = emb.embed(texts)
    rows = []
    for (fid, (text, conf, days, evidence)), vec in zip(SEED_FACTS.items(), vecs, strict=True):
        at = AS_OF - timedelta(days=days)
        rows.append({
            "id": fid, "user_id": USER, "text": text, "confidence": conf, "confidence_at": at,
            "evidence_count": evidence, "asserted_at": at, "created_at": at, "last_updated": at,
            "last_reinforced_at": at, "embedding": vec.tolist(), "embedding_model": emb.model,
            "embedding_dim": emb.dim, "content_hash": content_hash(text),
        })
    with db.open_store(settings) as con, db.transaction(con):
        with db.registered(con, "seed_facts", pa.Table.from_pylist(rows)):
            con.execute(
                "insert into facts (id, user_id, text, confidence, confidence_at, evidence_count, asserted_at,"
                " created_at, last_updated, last_reinforced_at, embedding, embedding_model, embedding_dim,"
                " content_hash) select id, user_id, text, confidence, confidence_at, evidence_count, asserted_at,"
                " created_at, last_updated, last_reinforced_at, embedding, embedding_model, embedding_dim,"
                " content_hash from seed_facts"
            )
        con.execute(
            "insert into fact_sources (user_id, fact_id, episode_id, relation, similarity, run_id)"
            " select user_id, id, 'seed-' || id, 'extracted_from', 1.0, 'seed' from facts"
        )
        con.execute("update episodes set consolidated_run_id = 'seed' where id like 'seed-%'")


def _decay(c: float, days: float) -> float:
    return c * math.exp(-RATE * days)


def _reinforce(c: float, k: int) -> float:
    for _ in range(k):
        c += GAIN * (1 - c)
    return c


def expected() -> dict[str, tuple[float, str]]:
    """Fact text prefix -> (confidence, status) after one nightly run at AS_OF."""
    # the four new Alice episodes form a new fact and, not being its sources, support the seeded one
    alice = _reinforce(_decay(0.8, 10), 4)
    new_alice = _reinforce(0.5, 3)
    # the merge winner gains the new fact's 4 episodes of evidence
    winner = _reinforce(alice, 4)
    never = _reinforce(0.5, 2) / 2  # new 3-episode cluster, then halved by the contradiction
    return {
        "f_alice": (winner, "active"),
        "alice works": (new_alice, "merged_into"),
        "f_coffee": (_decay(0.7, 5) / 2, "active"),
        "f_stale": (_decay(0.35, 100), "deprecated"),
        # below deprecate_below once halved, but a contradiction review waits on it: it stays, contested
        "Bob never": (never, "active"),
        "Dana is": (_reinforce(0.5, 2), "active"),
    }


EXPECTED_EVENTS = {
    "f_alice": ["merged", "reinforced"],
    "alice works": ["created", "merged"],
    "f_coffee": ["contradicted"],
    "f_stale": ["deprecated"],
    "Bob never": ["contradicted", "created"],
    "Dana is": ["created"],
}
