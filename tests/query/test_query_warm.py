"""engram.query.warm: a serving process pays a first search's one-time costs before its first query."""

from __future__ import annotations

import logging
from pathlib import Path

from engram.index.vector_index import CACHE
from engram.mcp.server import EngramMCP
from engram.query import search_memory
from engram.query.warm import warm_up, warm_up_in_background
from engram.store import db
from engram.text import dates
from tests.query_seed import seed_episodes, seed_facts


def test_warm_up_builds_the_indexes_and_loads_the_date_parser(settings, con):
    seed_episodes(settings, con, [{"id": "e1", "content": "I adopted a cat named Milo last spring"}])
    seed_facts(settings, con, [{"id": "f1", "text": "Ana adopted a cat named Milo"}])
    builds = CACHE.builds
    assert warm_up(settings, "u1", con=con) > 0
    assert CACHE.builds == builds + 2  # the episodes' and the facts' index
    assert dates._search.cache_info().currsize == 1
    hits = search_memory("cat named Milo", "facts", 5, "u1", settings=settings, con=con)
    assert [h.id for h in hits] == ["f1"] and CACHE.builds == builds + 2  # the first query built nothing


def test_warm_up_creates_no_store(settings):
    assert not Path(settings.db_path).exists()
    assert warm_up(settings, "u1") is None
    assert not Path(settings.db_path).exists()


def test_a_failing_warm_up_is_logged_not_raised(caplog):
    def boom() -> None:
        raise RuntimeError("secret memory text")

    with caplog.at_level(logging.WARNING, logger="engram.query.warm"):
        warm_up_in_background(boom).join(timeout=10)
    assert "search warm-up failed (RuntimeError)" in caplog.text
    assert "secret" not in caplog.text


def test_the_mcp_server_warms_up_its_tenant_in_the_background(settings):
    with db.open_store(settings) as con:
        seed_facts(settings, con, [{"id": "f1", "text": "Ana adopted a cat named Milo"}])
    app = EngramMCP(settings, "u1")
    builds = CACHE.builds
    app.warm_up().join(timeout=60)
    assert app.ctx._embedder is not None and CACHE.builds == builds + 2
    out = app.call("search_memory", {"query": "cat named Milo", "limit": 1})
    assert not out.is_error and out.structured_content["results"] and CACHE.builds == builds + 2


def test_a_first_dated_question_resolves_its_dates_while_the_query_is_embedded(settings, con, monkeypatch):
    from engram.query import search as search_module

    seed_facts(settings, con, [{"id": "f1", "text": "Ana adopted a cat named Milo"},
                               {"id": "f2", "text": "Ben bought a bike"}])
    query = "what did Ana adopt on 1 January 2026?"
    in_turn = [(h.id, h.score) for h in search_memory(query, "facts", 5, "u1", settings=settings, con=con)]
    submitted = []
    real_submit = search_module._FIRST_DATES.submit
    monkeypatch.setattr(search_module, "parser_loaded", lambda: False)
    monkeypatch.setattr(search_module._FIRST_DATES, "submit",
                        lambda *a, **k: submitted.append(a[1]) or real_submit(*a, **k))
    ahead = [(h.id, h.score) for h in search_memory(query, "facts", 5, "u1", settings=settings, con=con)]
    assert ahead == in_turn and in_turn and submitted == [query]
    search_memory("what did Ana adopt?", "facts", 5, "u1", settings=settings, con=con)
    assert submitted == [query]  # no time named: nothing to load ahead


def test_a_remote_embedder_is_not_called_by_the_warm_up(settings, con):
    seed_facts(settings, con, [{"id": "f1", "text": "Ana adopted a cat named Milo"}])

    class Remote:
        model, dim, provider = "hash-384", settings.embed_dim, "gemini"

        def embed(self, texts):
            raise AssertionError("the warm-up called the paid embedder")

    remote = settings.model_copy(update={"embedder": "gemini"})
    builds = CACHE.builds
    assert warm_up(remote, "u1", con=con, embedder=Remote()) > 0
    assert CACHE.builds == builds + 2 and dates._search.cache_info().currsize == 1
