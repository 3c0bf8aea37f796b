"""The read snapshot without the CLI: atomic switch, pruning that spares held snapshots, the publish rule."""

from __future__ import annotations

import fcntl
import os
from datetime import datetime

import pytest

from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes
from engram.store.snapshot import (
    NoSnapshot,
    current_snapshot,
    hold_snapshot,
    open_snapshot,
    publish_after_run,
    publish_snapshot,
    snapshot_root,
)


@pytest.fixture
def seeded(settings: Settings) -> Settings:
    add_episodes([
        {"user_id": "ann", "content": "Ann lives in Porto", "created_at": "2026-11-01T09:00:00Z"},
        {"user_id": "ann", "content": "Ann's PIN is 1234", "created_at": "2026-11-01T09:01:00Z", "is_private": True},
        {"user_id": "bo", "content": "Bo plays chess", "created_at": "2026-11-02T09:00:00Z"},
    ], settings)
    return settings


def _names(settings: Settings) -> list[str]:
    return sorted(p.name for p in snapshot_root(settings).glob("snap-*"))


def test_publish_switches_current_and_keeps_the_newest_two(seeded: Settings) -> None:
    with pytest.raises(NoSnapshot):
        with open_snapshot(seeded):
            pass
    first = publish_snapshot(seeded, now=datetime(2026, 11, 3, 1))
    assert current_snapshot(seeded).name == first.snapshot_id
    assert first.rows["episodes"] == 2  # the private episode is left out
    second = publish_snapshot(seeded, now=datetime(2026, 11, 3, 2))
    third = publish_snapshot(seeded, now=datetime(2026, 11, 3, 3))
    assert current_snapshot(seeded).name == third.snapshot_id
    assert _names(seeded) == [second.snapshot_id, third.snapshot_id] and third.removed == [first.snapshot_id]
    with open_snapshot(seeded) as con:
        assert con.execute("select user_id, episodes from tenants order by 1").fetchall() == [("ann", 1), ("bo", 1)]
        assert con.execute("select count(*) from archived_facts").fetchall() == [(0,)]
        assert con.execute("select snapshot_id, include_private from snapshot_info").fetchall() == [
            (third.snapshot_id, False)]


def test_a_snapshot_held_by_a_reader_is_not_pruned(seeded: Settings) -> None:
    first = publish_snapshot(seeded, now=datetime(2026, 11, 3, 1))
    with hold_snapshot(seeded) as held:
        assert held.name == first.snapshot_id
        publish_snapshot(seeded, now=datetime(2026, 11, 3, 2))
        third = publish_snapshot(seeded, now=datetime(2026, 11, 3, 3))
        assert first.snapshot_id in _names(seeded) and third.removed == []  # beyond keep=2, but held
    fourth = publish_snapshot(seeded, now=datetime(2026, 11, 3, 4))
    assert first.snapshot_id in fourth.removed and first.snapshot_id not in _names(seeded)


def test_prune_takes_the_lock_before_deleting(seeded: Settings) -> None:
    first = publish_snapshot(seeded, now=datetime(2026, 11, 3, 1))
    fd = os.open(first.path / "readers.lock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # a reader in any process: the same shared lock engram sql takes
    try:
        publish_snapshot(seeded, now=datetime(2026, 11, 3, 2))
        publish_snapshot(seeded, now=datetime(2026, 11, 3, 3))
        assert first.path.is_dir()
    finally:
        os.close(fd)


def test_private_rows_with_the_setting(seeded: Settings) -> None:
    loud = seeded.model_copy(update={"snapshot_include_private": True})
    assert publish_snapshot(loud).rows["episodes"] == 3
    with open_snapshot(loud) as con:
        assert con.execute("select count(*) from episodes where is_private").fetchall() == [(1,)]


def test_publish_after_run_only_after_a_successful_writing_run(seeded: Settings) -> None:
    assert publish_after_run(seeded, "run-1", True, {"ann": {}}) == {"skipped": "dry run"}
    failed = publish_after_run(seeded, "run-1", False, {"ann": {"failed": "boom"}, "bo": {}})
    assert failed["skipped"].startswith("1 tenant(s) failed") and current_snapshot(seeded) is None
    done = publish_after_run(seeded, "run-1", False, {"ann": {}, "bo": {"skipped": "lease held"}})
    assert current_snapshot(seeded).name == done["snapshot_id"]
    with open_snapshot(seeded) as con:
        assert con.execute("select run_id from snapshot_info").fetchall() == [("run-1",)]


def test_a_failed_publish_leaves_the_current_snapshot(seeded: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    first = publish_snapshot(seeded)
    monkeypatch.setattr(db, "query_batches", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    out = publish_after_run(seeded, "run-2", False, {"ann": {}})
    assert "disk full" in out["failed"]
    assert current_snapshot(seeded).name == first.snapshot_id
    assert not list(snapshot_root(seeded).glob(".tmp-*"))  # the half-written directory is gone
