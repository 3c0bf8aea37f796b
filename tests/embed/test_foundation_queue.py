"""The embedding queue: drains pending rows in batches; a failing embedder leaves the rest pending."""

from __future__ import annotations

import numpy as np
import pytest

from engram.embed.models import HashEmbedder
from engram.embed.queue import drain
from engram.errors import EmbedderUnavailable
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.ingest import add_episodes


def _seed(settings: Settings, n: int, user: str = "u") -> None:
    add_episodes(
        [{"user_id": user, "content": f"episode number {i}", "created_at": f"2024-01-01T00:00:{i:02d}"}
         for i in range(n)],
        settings,
    )


def _status(settings: Settings) -> dict[str, int]:
    with db.open_store(settings) as con:
        return dict(con.execute("select status, count(*) from episodes group by status").fetchall())


class FailingAfter:
    """Embeds `ok_calls` batches, then fails like a dead model server."""

    provider, model, dim = "flaky", "flaky-1", 384

    def __init__(self, ok_calls: int, exc: Exception) -> None:
        self.ok_calls = ok_calls
        self.exc = exc
        self.calls = 0
        self._inner = HashEmbedder(384)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > self.ok_calls:
            raise self.exc
        return self._inner.embed(texts)


def test_drain_embeds_everything_in_batches_and_marks_rows_active(settings: Settings) -> None:
    s = load_settings(embed_batch_size=4)
    _seed(s, 10)
    seen: list[int] = []
    e = HashEmbedder(s.embed_dim)
    assert drain(s, e, progress=seen.append) == 10
    assert seen == [4, 4, 2]
    with db.open_store(s) as con:
        rows = con.execute(
            "select content, embedding, embedding_model, embedding_dim, status from episodes order by id"
        ).fetchall()
    assert {(r[2], r[3], r[4]) for r in rows} == {(e.model, 384, "active")}
    for content, vector, *_ in rows:
        assert np.allclose(np.array(vector, np.float32), e.embed([content])[0])
    assert drain(s, e) == 0  # nothing left: a second drain is a no-op


def test_drain_for_one_tenant_leaves_the_others_pending(settings: Settings) -> None:
    _seed(settings, 3, "a")
    _seed(settings, 2, "b")
    assert drain(settings, HashEmbedder(settings.embed_dim), user_id="a") == 3
    with db.open_store(settings) as con:
        got = con.execute("select user_id, status, count(*) from episodes group by all order by 1").fetchall()
    assert got == [("a", "active", 3), ("b", "pending_embed", 2)]


@pytest.mark.parametrize(
    "exc", [RuntimeError("onnx crashed"), EmbedderUnavailable("server down"), MemoryError()]
)
def test_a_failing_embedder_keeps_the_rest_pending_and_raises_typed(settings: Settings, exc: Exception) -> None:
    s = load_settings(embed_batch_size=3)
    _seed(s, 8)
    flaky = FailingAfter(ok_calls=1, exc=exc)
    with pytest.raises(EmbedderUnavailable):
        drain(s, flaky)
    assert _status(s) == {"active": 3, "pending_embed": 5}
    assert drain(s, HashEmbedder(384)) == 5  # a later run picks up exactly the rest
    assert _status(s) == {"active": 8}


def test_an_embedder_returning_the_wrong_dimension_stores_nothing(settings: Settings) -> None:
    _seed(settings, 2)

    class WrongDim(FailingAfter):
        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 10), np.float32)

    with pytest.raises(EmbedderUnavailable, match="episodes.embedding: expected dimension 384"):
        drain(settings, WrongDim(1, RuntimeError()))
    assert _status(settings) == {"pending_embed": 2}


def test_facts_without_vectors_are_embedded_too(settings: Settings, con: db.Connection) -> None:
    con.execute(
        "insert into facts (id, user_id, text, confidence, asserted_at, created_at, last_updated, "
        "last_reinforced_at, content_hash) values "
        "('f1', 'u', 'user likes tea', 0.5, now(), now(), now(), now(), 'h'), "
        "('f2', 'u', 'archived one', 0.5, now(), now(), now(), now(), 'h2')"
    )
    con.execute("update facts set status = 'archived' where id = 'f2'")
    con.close()
    assert drain(settings, HashEmbedder(384), table="facts") == 1
    with db.open_store(settings) as c:
        got = c.execute("select id, embedding_dim, embedding is null from facts order by id").fetchall()
    assert got == [("f1", 384, False), ("f2", None, True)]


def test_rows_are_read_in_chunks_and_embedded_in_batches(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engram.embed.queue as queue

    monkeypatch.setattr(queue, "READ_ROWS", 5)
    s = load_settings(embed_batch_size=2)
    _seed(s, 12)
    seen: list[int] = []
    assert drain(s, HashEmbedder(384), progress=seen.append) == 12
    assert seen == [2, 2, 1, 2, 2, 1, 2]
    flaky_store = load_settings(embed_batch_size=2, db_path=str(s.db_path) + ".b")
    _seed(flaky_store, 12)
    with pytest.raises(EmbedderUnavailable):
        drain(flaky_store, FailingAfter(ok_calls=4, exc=RuntimeError("gone")))
    assert _status(flaky_store) == {"active": 7, "pending_embed": 5}  # 5 + 2 kept, the failing pair not
