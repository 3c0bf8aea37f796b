"""ENGRAM_HOT_PATH=auto, the default: an agent's calls skip the store while an embedding worker watches it."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import Any

import pytest

from engram.embed.models import HashEmbedder
from engram.embed.worker import drain_once, watch, watched
from engram.query.search import search_memory
from engram.settings import Settings, load_settings
from engram.store import db, hot_path, inbox
from engram.store.ingest import add_episodes


def _stored(settings: Settings) -> list[str]:
    with db.open_store(settings, read_only=True) as con:
        return [c for (c,) in con.execute("select content from episodes order by content").fetchall()]


@contextmanager
def _store_never_opened(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Any open of the live store (writer or reader, waiting or not) fails the test."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the store was opened")

    with monkeypatch.context() as m:
        for name in ("open_store", "open_reader", "open_store_if_free", "open_reader_if_free"):
            m.setattr(db, name, refuse)
        yield


def test_the_default_is_auto(settings: Settings) -> None:
    assert settings.hot_path == "auto"


def test_while_a_worker_watches_a_default_write_and_search_never_open_the_store(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    add_episodes([{"user_id": "alice", "content": "first, through the store"}], settings)
    with watched(settings):
        with _store_never_opened(monkeypatch):
            result = add_episodes([{"user_id": "alice", "content": "the heron nests by the pond"}], settings)
            hits = search_memory("heron", user_id="alice", settings=settings)
            other = search_memory("heron", user_id="bob", settings=settings)
        assert (result.queued, result.inserted) == (1, 0)
        assert [h.id for h in hits] == result.ids  # found by its words at once, from the inbox
        assert other == []  # another tenant sees none of it
        assert _stored(settings) == ["first, through the store"]  # waiting for the worker's fold
    assert drain_once(settings, HashEmbedder(settings.embed_dim))["episodes"] == 2
    assert _stored(settings) == ["first, through the store", "the heron nests by the pond"]


def test_without_a_worker_a_default_write_is_stored_at_once(settings: Settings) -> None:
    with watched(settings):
        pass  # a worker that stopped removes its mark
    assert not hot_path.worker_mark(settings).exists()
    result = add_episodes([{"user_id": "alice", "content": "I moved to Lisbon"}], settings)
    assert (result.inserted, result.queued) == (1, 0)
    assert _stored(settings) == ["I moved to Lisbon"]  # `engram sql` right after an ingest sees it


def test_a_mark_left_by_a_killed_worker_goes_stale(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "creates the store"}], settings)
    assert hot_path.touch_worker_mark(settings) and hot_path.off_store(settings)
    old = time.time() - hot_path.FRESH_S - 1
    os.utime(hot_path.worker_mark(settings), (old, old))
    assert not hot_path.worker_watching(settings) and not hot_path.off_store(settings)
    assert add_episodes([{"user_id": "alice", "content": "after the worker died"}], settings).inserted == 1


@pytest.mark.parametrize(("mode", "rows", "watching", "skips"), [
    ("auto", 1, True, True),
    ("auto", hot_path.AUTO_INBOX_MAX_ROWS, True, True),
    ("auto", hot_path.AUTO_INBOX_MAX_ROWS + 1, True, False),  # a bulk ingest pays the open once
    ("auto", 1, False, False),
    ("shared", 1, True, False),
    ("inbox", 1, False, True),
    ("inbox", hot_path.AUTO_INBOX_MAX_ROWS + 1, False, True),
])
def test_which_calls_skip_the_store(settings: Settings, mode: str, rows: int, watching: bool, skips: bool) -> None:
    add_episodes([{"user_id": "alice", "content": "creates the store"}], settings)
    if watching:
        hot_path.touch_worker_mark(settings)
    assert hot_path.off_store(settings.model_copy(update={"hot_path": mode}), rows) is skips


def test_a_bulk_write_goes_to_the_store_while_a_worker_watches(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "creates the store"}], settings)
    rows = [{"user_id": "alice", "content": f"bulk row {i}"} for i in range(hot_path.AUTO_INBOX_MAX_ROWS + 1)]
    with watched(settings):
        result = add_episodes(rows, settings)
    assert (result.inserted, result.queued) == (len(rows), 0)


def test_a_worker_never_marks_a_store_that_does_not_exist(settings: Settings) -> None:
    with watched(settings):
        assert not hot_path.worker_watching(settings)
    assert not inbox.root(settings).exists() and not os.path.exists(settings.db_path)


def test_watch_keeps_the_mark_fresh_for_longer_than_it_stays_fresh_and_removes_it(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    add_episodes([{"user_id": "alice", "content": "creates the store"}], settings)
    monkeypatch.setattr(hot_path, "HEARTBEAT_S", 0.05)
    monkeypatch.setattr(hot_path, "FRESH_S", 0.3)
    stop = threading.Event()
    seen: list[bool] = []
    # one pass that takes longer than FRESH_S: the mark stays fresh while it runs
    worker = threading.Thread(target=watch, args=(settings, HashEmbedder(settings.embed_dim)),
                              kwargs={"poll_s": 60, "stop": stop,
                                      "drain_pass": lambda s, e: (time.sleep(1.0), {})[1]})
    worker.start()
    try:
        for _ in range(10):
            time.sleep(0.1)
            seen.append(hot_path.worker_watching(settings))
    finally:
        stop.set()
        worker.join()
    assert all(seen[1:]) and not hot_path.worker_watching(settings)


def test_each_shard_is_marked_and_a_write_goes_to_its_tenants_shard_inbox(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_SHARDS", "2")
    sharded = load_settings()
    import engram

    engram.add_episodes([{"user_id": u, "content": f"{u} creates a shard"} for u in ("alice", "bob", "carol")],
                        sharded)
    with watched(sharded):
        result = engram.add_episodes([{"user_id": "alice", "content": "queued in alice's shard"}], sharded)
        hits = search_memory("queued", user_id="alice", settings=sharded)
    assert (result.inserted, result.queued) == (0, 1)
    assert [h.text for h in hits] == ["queued in alice's shard"]
