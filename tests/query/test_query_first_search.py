"""A process's first search loads the embedding model on a thread while it opens the store and the
tenant's published indexes; it answers as any later search does, and an embedder that fails says so."""

from __future__ import annotations

from typing import Any

import pytest

from engram.embed import models as embed
from engram.errors import EmbedderUnavailable
from engram.index import cache, writer
from engram.index.vector_index import CACHE
from engram.query import search, search_memory
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes
from tests.query_seed import seed_facts

EPISODES = ["I adopted a cat named Milo last spring", "We drove to Porto for the jazz festival",
            "My sister teaches chemistry at a high school", "I switched from coffee to green tea in the morning"]


@pytest.fixture
def minilm_store(settings: Settings) -> Settings:
    """A store embedded with the packaged MiniLM, its indexes published."""
    s = settings.model_copy(update={"embedder": "minilm", "search_index": True, "search_index_min_rows": 0})
    model = embed.from_settings(s)
    records = [{"user_id": "u1", "content": c, "created_at": f"2026-01-0{i + 1}T12:00:00"} for i, c in enumerate(EPISODES)]
    with db.open_store(s) as con:
        add_episodes(records, s, embeddings=model.embed(EPISODES), embedding_model=model.model, con=con)
        seed_facts(s, con, [{"id": "f1", "text": "The user drinks green tea in the morning"}], embedder=model)
        writer.write_tenant(s, con, "u1", model.model, model.dim, run_id="r1")
    return s


@pytest.fixture
def model_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no MiniLM model loaded yet (the loaded ones come back afterwards)."""
    monkeypatch.setattr(embed, "_MINILM_LOADED", {})
    cache.PERSISTED.clear()
    CACHE.clear()
    yield
    cache.PERSISTED.clear()
    CACHE.clear()


def test_the_identity_known_before_the_load_is_the_one_the_model_reports(settings, model_not_loaded) -> None:
    s = settings.model_copy(update={"embedder": "minilm"})
    assert embed.identity_before_load(s) == (embed.MINILM_MODEL, embed.MINILM_DIM)
    loaded = embed.from_settings(s)
    assert (loaded.model, loaded.dim) == (embed.MINILM_MODEL, embed.MINILM_DIM)
    assert embed.identity_before_load(s) is None  # loaded: nothing to overlap
    assert embed.identity_before_load(settings) is None  # the hash embedder loads nothing
    assert embed.identity_before_load(s.model_copy(update={"embed_model_path": "/m.onnx"})) is None  # dim unknown


def test_a_first_search_opens_the_indexes_while_it_embeds_and_answers_as_a_later_one(
        minilm_store, model_not_loaded, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[tuple[str, ...]] = []
    original = search._map_indexes

    def spy(con: Any, settings: Any, tables: tuple[str, ...], *args: Any) -> None:
        opened.append(tables)
        original(con, settings, tables, *args)

    monkeypatch.setattr(search, "_map_indexes", spy)
    before = cache.PERSISTED.loads
    first = search_memory("what does the user drink in the morning", "both", 3, "u1", settings=minilm_store)
    loads = cache.PERSISTED.loads
    later = search_memory("what does the user drink in the morning", "both", 3, "u1", settings=minilm_store)
    assert opened == [("facts", "episodes")]  # only the first search had a model to load
    assert loads == before + 2  # the episodes' and the facts' published index, mapped by the first search
    assert cache.PERSISTED.loads == before + 2  # and by no later one
    assert [(h.id, h.score) for h in first] == [(h.id, h.score) for h in later]
    assert first[0].id == "f1"


def test_a_model_that_fails_to_load_fails_the_first_search_with_its_own_error(
        minilm_store, model_not_loaded, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Any, *args: Any, **kwargs: Any) -> None:
        raise EmbedderUnavailable("cannot load embedding model: truncated file")

    monkeypatch.setattr(embed.MiniLMEmbedder, "__init__", broken)
    with pytest.raises(EmbedderUnavailable, match="truncated file"):
        search_memory("green tea", "facts", 3, "u1", settings=minilm_store)
