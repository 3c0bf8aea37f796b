"""The embedding worker republishes a tenant whose inbox holds few but long folded episodes: a reader of the
published index plus the inbox would otherwise tokenize and embed them at its first search of the tenant."""

from __future__ import annotations

from engram.embed.models import HashEmbedder
from engram.embed.worker import INBOX_PUBLISH_CHARS, drain_once
from engram.index.disk import CURRENT, index_dir
from engram.settings import Settings
from engram.store import inbox
from engram.store.ingest import add_episodes


def _long(n: int, user: str) -> list[dict]:
    size = INBOX_PUBLISH_CHARS // 3 + 10
    return [{"user_id": user, "content": f"turn {i}: " + "the assistant explains the build " * (size // 32)}
            for i in range(n)]


def test_three_long_episodes_are_republished_and_their_journal_dropped(settings: Settings) -> None:
    add_episodes(_long(3, "alice"), settings)  # through the store: journalled as a folded segment
    add_episodes([{"user_id": "bob", "content": "a short note"}], settings)
    assert [s.folded for s in inbox.segments(settings, "alice")] == [True]
    embedder = HashEmbedder(settings.embed_dim)
    counts = drain_once(settings, embedder)
    assert (counts["episodes"], counts["republished"]) == (4, 1)  # alice only: bob's inbox holds one short row
    assert (index_dir(settings, "alice", "episodes", embedder.model, embedder.dim) / CURRENT).exists()
    assert inbox.segments(settings, "alice") == [] and len(inbox.segments(settings, "bob")) == 1


def test_two_long_episodes_stay_in_the_inbox(settings: Settings) -> None:
    add_episodes(_long(2, "alice"), settings)
    assert drain_once(settings, HashEmbedder(settings.embed_dim))["republished"] == 0
    assert len(inbox.segments(settings, "alice")) == 1
