"""A small write from a process with a local model loaded stores its vectors with it (settings.embed_on_write)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from engram.embed import models
from engram.embed.models import HashEmbedder
from engram.embed.worker import drain_once, embed_inbox
from engram.query.search import search_memory
from engram.settings import Settings
from engram.store import db, inbox, ingest
from engram.store.ingest import add_episodes

SECRET = "my locker code is 5521"


class _Loaded(HashEmbedder):
    """Stands for a model this process has loaded: the hash embedder, counting its runs."""

    def __init__(self, dim: int, fail: bool = False) -> None:
        super().__init__(dim)
        self.fail, self.runs = fail, 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.runs += 1
        if self.fail:
            raise RuntimeError("the model broke")
        return super().embed(texts)


@pytest.fixture
def loaded(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> _Loaded:
    embedder = _Loaded(settings.embed_dim)
    monkeypatch.setattr(ingest, "_write_embedder", lambda s: embedder)
    return embedder


def _stored(settings: Settings) -> dict[str, tuple]:
    with db.open_store(settings, read_only=True) as con:
        rows = con.execute("select content, status, embedding, embedding_model from episodes").fetchall()
    return {c: (s, e, m) for c, s, e, m in rows}


def test_a_small_write_through_the_store_is_stored_embedded(settings: Settings, loaded: _Loaded) -> None:
    add_episodes([{"user_id": "alice", "content": "the heron nests by the pond"},
                  {"user_id": "alice", "content": "the otter swims at dusk"}], settings)
    stored = _stored(settings)
    assert {c: s for c, (s, _, _) in stored.items()} == {"the heron nests by the pond": "active",
                                                         "the otter swims at dusk": "active"}
    expected = HashEmbedder(settings.embed_dim).embed(["the heron nests by the pond"])[0]
    assert np.allclose(stored["the heron nests by the pond"][1], expected, atol=1e-6)
    assert loaded.runs == 1  # one model run for the write
    assert drain_once(settings, HashEmbedder(settings.embed_dim))["episodes"] == 0  # nothing left to embed


def test_an_inbox_write_carries_its_vectors_so_the_search_and_the_worker_embed_nothing(
        settings: Settings, loaded: _Loaded) -> None:
    agent = settings.model_copy(update={"hot_path": "inbox"})
    add_episodes([{"user_id": "alice", "content": "first, through the store"}], settings)
    add_episodes([{"user_id": "alice", "content": "the heron nests by the pond"}], agent)
    [segment] = [s for s in inbox.segments(agent, "alice") if not s.folded]
    assert inbox.read(segment)["status"].to_pylist() == ["active"]
    runs = loaded.runs
    hits = search_memory("heron", user_id="alice", settings=agent, embedder=loaded, method="vector")
    assert hits[0].text == "the heron nests by the pond"
    assert loaded.runs == runs + 1  # the query alone
    assert embed_inbox(agent, loaded) == 0  # no vectors file needed beside the segment
    assert drain_once(settings, HashEmbedder(settings.embed_dim))["episodes"] == 0  # folded, embedded already
    assert _stored(settings)["the heron nests by the pond"][0] == "active"


def test_a_large_write_a_disabled_setting_and_a_failing_model_leave_the_rows_to_the_queue(
        settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    embedder = _Loaded(settings.embed_dim)
    monkeypatch.setattr(ingest, "_write_embedder", lambda s: embedder)
    add_episodes([{"user_id": "alice", "content": f"bulk note {i}"} for i in range(settings.embed_on_write + 1)],
                 settings)
    off = settings.model_copy(update={"embed_on_write": 0})
    add_episodes([{"user_id": "alice", "content": "written with the setting off"}], off)
    assert embedder.runs == 0
    broken = _Loaded(settings.embed_dim, fail=True)
    monkeypatch.setattr(ingest, "_write_embedder", lambda s: broken)
    with caplog.at_level(logging.WARNING):
        result = add_episodes([{"user_id": "alice", "content": SECRET}], settings)
    assert result.inserted == 1 and broken.runs == 1  # the write landed all the same
    assert "embedding 1 episode(s) failed (RuntimeError)" in caplog.text and SECRET not in caplog.text
    statuses = {s for s, _, _ in _stored(settings).values()}
    assert statuses == {"pending_embed"}


def test_a_process_that_never_loaded_the_model_does_not_embed_on_write(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "_MINILM_LOADED", {})
    monkeypatch.setattr(ingest, "_write_embedder", None)
    minilm = settings.model_copy(update={"embedder": "minilm"})
    assert models.loaded_local(minilm) is None
    assert models.loaded_local(settings) is None  # the hash embedder has no model: writes queue as before
    add_episodes([{"user_id": "alice", "content": "written by a pure writer"}], minilm)
    assert models._MINILM_LOADED == {}  # the write loaded nothing
    assert _stored(settings)["written by a pure writer"][0] == "pending_embed"
    loaded = models.from_settings(minilm)
    assert models.loaded_local(minilm) is loaded
    add_episodes([{"user_id": "alice", "content": "written once the model is loaded"}], minilm)
    assert _stored(settings)["written once the model is loaded"][0] == "active"
