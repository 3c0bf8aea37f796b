"""The embedding worker's pass: every tenant's episodes and facts, a locked store skipped, not raised."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.embed.models import HashEmbedder
from engram.embed.worker import drain_once, watch
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.ingest import add_episodes_routed
from engram.store.sharding import all_shard_settings, for_tenant
from tests.store_hold import held

ROOT = Path(__file__).resolve().parents[2]
TENANTS = ("alice", "bob")


def _seed(settings: Settings) -> None:
    """Three episodes and one fact without a vector per tenant, each in its tenant's store file."""
    add_episodes_routed([{"user_id": u, "content": f"{u} said thing {i}", "created_at": f"2026-11-01T09:00:0{i}Z"}
                         for u in TENANTS for i in range(3)], settings)
    for u in TENANTS:
        with db.open_store(for_tenant(settings, u)) as con:
            con.execute(
                "insert into facts (id, user_id, text, confidence, asserted_at, created_at, last_updated, "
                "last_reinforced_at, content_hash) values (?, ?, 'likes tea', 0.5, now(), now(), now(), now(), ?)",
                [f"f-{u}", u, f"h-{u}"])


def _unembedded(settings: Settings) -> list[tuple]:
    with db.open_store(settings, read_only=True) as con:
        return con.execute(
            "select 'episodes', user_id, count(*) from episodes where status = 'pending_embed' group by all "
            "union all select 'facts', user_id, count(*) from facts where embedding is null group by all"
        ).fetchall()


def test_a_pass_embeds_every_tenant_and_the_next_finds_nothing(settings: Settings) -> None:
    _seed(settings)
    embedder = HashEmbedder(settings.embed_dim)
    assert drain_once(settings, embedder) == {"episodes": 6, "facts": 2, "locked": 0, "inbox_embedded": 0, "republished": 0}
    assert _unembedded(settings) == []
    assert drain_once(settings, embedder) == {"episodes": 0, "facts": 0, "locked": 0, "inbox_embedded": 0, "republished": 0}


def test_every_existing_shard_is_drained_and_none_is_created(settings: Settings, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_SHARDS", "4")
    sharded = load_settings()
    _seed(sharded)
    before = {s.db_path for s in all_shard_settings(sharded, existing_only=True)}
    assert before == {for_tenant(sharded, u).db_path for u in TENANTS}
    assert drain_once(sharded, HashEmbedder(sharded.embed_dim)) == {"episodes": 6, "facts": 2, "locked": 0, "inbox_embedded": 0, "republished": 0}
    assert {s.db_path for s in all_shard_settings(sharded, existing_only=True)} == before
    for u in TENANTS:
        assert _unembedded(for_tenant(sharded, u)) == []


def test_a_store_locked_by_another_process_is_reported_not_raised(settings: Settings) -> None:
    _seed(settings)
    embedder = HashEmbedder(settings.embed_dim)
    with held(settings):
        assert drain_once(settings, embedder) == {"episodes": 0, "facts": 0, "locked": 1, "inbox_embedded": 0, "republished": 0}  # at once, not 30 s
    assert drain_once(settings, embedder) == {"episodes": 6, "facts": 2, "locked": 0, "inbox_embedded": 0, "republished": 0}  # the next pass gets in


def test_watch_stops_after_max_seconds_and_when_stopped(settings: Settings) -> None:
    _seed(settings)
    embedder = HashEmbedder(settings.embed_dim)
    seen: list[dict[str, int]] = []
    totals = watch(settings, embedder, poll_s=0.1, max_seconds=1.5, on_pass=seen.append)
    assert totals["episodes"] == 6 and totals["facts"] == 2 and totals["passes"] == len(seen) >= 2
    stop = threading.Event()
    stop.set()  # a signal came in: the pass under way is the last
    assert watch(settings, embedder, poll_s=60, stop=stop)["passes"] == 1
    assert watch(settings, embedder, poll_s=60, once=True)["passes"] == 1


def test_stop_finishes_the_batch_under_way_and_keeps_the_rest_pending(settings: Settings) -> None:
    s = load_settings(embed_batch_size=2)
    _seed(s)
    calls = {"n": 0}

    def stop_after_first_batch() -> bool:
        calls["n"] += 1
        return calls["n"] > 1  # the check before the first table passes, the one after the first batch stops

    counts = drain_once(s, HashEmbedder(s.embed_dim), stop=stop_after_first_batch)
    assert counts == {"episodes": 2, "facts": 0, "locked": 0, "inbox_embedded": 0, "republished": 0}
    assert sum(n for table, _, n in _unembedded(s) if table == "episodes") == 4


@pytest.mark.parametrize("value, expected", [("0", 0.1), ("5", 5.0), ("99999", 3600.0)])
def test_poll_interval_is_bounded(settings: Settings, monkeypatch, value: str, expected: float) -> None:
    monkeypatch.setenv("ENGRAM_EMBED_POLL_S", value)
    assert load_settings().embed_poll_s == expected


class _Counting(HashEmbedder):
    """The hash embedder, counting its model runs."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.runs: list[int] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.runs.append(len(texts))
        return super().embed(texts)


def test_inbox_segments_are_embedded_a_batch_per_model_run_each_row_its_own_vector(settings: Settings) -> None:
    from engram.embed.worker import embed_inbox
    from engram.store import inbox
    from engram.store.ingest import add_episodes
    from engram.store.vectors import l2_normalize

    agent = settings.model_copy(update={"hot_path": "inbox", "embed_batch_size": 4})
    texts = [f"{u} wrote note {i}" for u in TENANTS for i in range(5)]
    for text in texts:  # one segment per add, as an agent writes
        add_episodes([{"user_id": text.split()[0], "content": text}], agent)
    add_episodes([{"user_id": "alice", "content": f"bulk {i}"} for i in range(6)], agent)  # over the batch size
    embedder = _Counting(agent.embed_dim)
    assert embed_inbox(agent, embedder) == 16
    # oldest first, 4 rows a run: alice's 4 + 1 (the 6-row segment does not fit beside it), the 6 alone, bob's 4 + 1
    assert embedder.runs == [4, 1, 6, 4, 1]
    for user in TENANTS:
        for seg in inbox.segments(agent, user):
            rows = inbox.read(seg)["content"].to_pylist()
            kept = inbox.read_vectors(seg, embedder.model, embedder.dim, len(rows))
            assert kept is not None and (kept == l2_normalize(HashEmbedder(agent.embed_dim).embed(rows))).all()
    assert embed_inbox(agent, embedder) == 0  # every segment has its vectors
