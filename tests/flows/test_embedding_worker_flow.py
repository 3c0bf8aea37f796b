"""The embedding-worker flow drains every tenant's queue pass after pass for duration_s seconds."""

from __future__ import annotations

from engram.flows.embedding import embedding_worker
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes


def test_embedding_worker_embeds_new_episodes_then_finds_nothing(settings: Settings, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_EMBED_POLL_S", "0.2")
    add_episodes([{"user_id": u, "content": f"{u} note {i}", "created_at": f"2026-11-01T09:00:0{i}Z"}
                  for u in ("alice", "bob") for i in range(2)], settings)
    first = embedding_worker(duration_s=1.0)
    assert (first["episodes"], first["facts"], first["locked"]) == (4, 0, 0) and first["passes"] >= 2
    with db.open_store(settings, read_only=True) as con:
        assert con.execute("select status, count(*) from episodes group by all").fetchall() == [("active", 4)]
    again = embedding_worker(duration_s=0)
    assert (again["episodes"], again["facts"], again["passes"]) == (0, 0, 1)
