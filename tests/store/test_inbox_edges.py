"""Inbox edges: a full disk, a journal that cannot be written, killed writers' temporary files, refused records."""

from __future__ import annotations

import errno
import os
import time

import pytest

from engram.embed.models import HashEmbedder
from engram.embed.worker import republish_inbox
from engram.errors import DiskFull
from engram.settings import Settings
from engram.store import db, inbox, inbox_notices
from engram.store.checks import inbox_findings
from engram.store.fold import TMP_MAX_AGE_S, fold_inbox
from engram.store.ingest import add_episodes
from tests.store.inbox_bad_files import queue


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(inbox.os, "fsync", no_space)


def test_a_full_disk_is_disk_full_naming_the_inbox_and_leaves_nothing_behind(settings: Settings,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    agent = settings.model_copy(update={"hot_path": "inbox"})
    queue(settings, "alice", "written before the disk filled")
    _full_disk(monkeypatch)
    with pytest.raises(DiskFull) as info:
        add_episodes([{"user_id": "alice", "content": "no room"}, {"user_id": "bob", "content": "no room"}], agent)
    assert info.value.code == "disk_full" and str(inbox.root(settings)) in str(info.value)
    monkeypatch.undo()
    leftovers = [p.name for p in inbox.root(settings).rglob("*") if p.is_file()]
    assert not [n for n in leftovers if n.startswith(inbox.TMP_PREFIX)]
    assert len([s for s in inbox.segments(settings, "alice")]) == 1 and inbox.segments(settings, "bob") == []


def test_a_stored_write_whose_journal_fails_reports_success_and_the_next_publish_covers_it(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    add_episodes([{"user_id": "alice", "content": "first"}], settings)
    real = inbox.write_segment

    def journal_fails(s, user, rows, folded=False):
        if folded:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(s, user, rows, folded)

    monkeypatch.setattr(inbox, "write_segment", journal_fails)
    result = add_episodes([{"user_id": "alice", "content": "stored, not journalled"}], settings)
    monkeypatch.undo()
    assert (result.inserted, len(result.ids)) == (1, 1)
    with db.open_store(settings, read_only=True) as con:
        assert con.execute("select count(*) from episodes where id = ?", [result.ids[0]]).fetchall() == [(1,)]
    assert inbox.unjournaled(settings, "alice")
    publishing = settings.model_copy(update={"inbox_publish_rows": 10_000})  # far more than waits
    assert republish_inbox(publishing, HashEmbedder(settings.embed_dim)) == 1
    assert not inbox.unjournaled(settings, "alice")


def test_the_fold_removes_killed_writers_temporary_files_once_they_are_old(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "first"}], settings)
    queue(settings, "alice", "queued")
    folder = inbox.tenant_dir(settings, "alice")
    old, young = folder / ".tmp-dead-writer.arrow-1234abcd", folder / ".tmp-live-writer.arrow-5678abcd"
    old.write_bytes(b"half")
    young.write_bytes(b"half")
    past = time.time() - TMP_MAX_AGE_S - 60
    os.utime(old, (past, past))
    with db.open_store(settings) as con:
        fold_inbox(con, settings)
    assert not old.exists() and young.exists()


def test_refused_records_are_counted_and_listed_by_the_check(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "id": "e1", "content": "the original"}], settings)
    agent = settings.model_copy(update={"hot_path": "inbox"})
    add_episodes([{"user_id": "alice", "id": "e1", "content": "another text under the same id"}], agent)
    inbox_notices.take()
    with db.open_store(settings) as con:
        assert fold_inbox(con, settings).rejected == 1
    [notice] = inbox_notices.take()
    assert (notice.kind, notice.records) == ("rejected", 1)
    [found] = inbox_findings(settings)["inbox_rejected"]
    assert found["records"] == 1 and found["file"] == notice.path
