"""One bad inbox segment is quarantined by the fold; every other segment and tenant goes on; readers skip it."""

from __future__ import annotations

import json

import pytest

from engram.query.search import search_memory
from engram.settings import Settings
from engram.store import db, inbox, inbox_notices
from engram.store.checks import inbox_findings
from engram.store.fold import fold_inbox
from engram.store.ingest import add_episodes
from tests.store.inbox_bad_files import KINDS, plant, queue


def _contents(settings: Settings) -> list[tuple[str, str]]:
    with db.open_store(settings, read_only=True) as con:
        return con.execute("select user_id, content from episodes order by all").fetchall()


@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_segment_is_quarantined_and_every_other_record_is_folded(settings: Settings, kind: str) -> None:
    add_episodes([{"user_id": "alice", "content": "stored first"}], settings)
    queue(settings, "alice", "alice before the bad file")
    bad = plant(settings, "alice", kind)
    queue(settings, "alice", "alice after the bad file")
    queue(settings, "bob", "bob's record")
    inbox_notices.take()
    with db.open_store(settings) as con:
        result = fold_inbox(con, settings)
    assert ("bob", "bob's record") in _contents(settings)
    assert {("alice", "alice before the bad file"), ("alice", "alice after the bad file")} <= set(_contents(settings))
    moved = bad.parent / inbox.QUARANTINE / bad.name
    assert not bad.exists() and moved.exists()
    reason = json.loads((moved.parent / f"{bad.name}.reason.json").read_text())
    assert reason["file"] == bad.name and reason["reason"] and reason["quarantined_at"]
    assert result.quarantined == [str(moved)]
    assert [n.path for n in inbox_notices.take() if n.kind == "quarantined"] == [str(moved)]
    found = inbox_findings(settings)
    assert [f["file"] for f in found["inbox_quarantined"]] == [str(moved)]
    with db.open_store(settings) as con:  # the next fold has nothing left to quarantine
        assert fold_inbox(con, settings).quarantined == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_search_skips_a_bad_segment_without_moving_it(settings: Settings, kind: str) -> None:
    agent = settings.model_copy(update={"hot_path": "inbox"})
    queue(settings, "alice", "the heron nests by the pond")
    bad = plant(settings, "alice", kind)
    hits = search_memory("heron", user_id="alice", settings=agent)
    assert hits and hits[0].text == "the heron nests by the pond"
    assert bad.exists()
    assert [f["file"] for f in inbox_findings(settings)["inbox_unreadable"]] == [str(bad)]


def test_a_deleted_user_file_is_rebuilt_from_the_segments(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "stored first"}], settings)
    queue(settings, "alice", "queued for alice")
    user_file = inbox.tenant_dir(settings, "alice") / inbox.USER_FILE
    user_file.unlink()
    with db.open_store(settings) as con:
        assert fold_inbox(con, settings).inserted == 1
    assert ("alice", "queued for alice") in _contents(settings)
    assert user_file.read_text() == "alice"


def test_a_user_file_nothing_can_name_is_refused_naming_the_directory(settings: Settings) -> None:
    folder = inbox.tenant_dir(settings, "alice")
    plant(settings, "alice", "random_bytes")
    (folder / inbox.USER_FILE).unlink(missing_ok=True)
    inbox_notices.take()
    assert inbox.tenants(settings) == []
    [notice] = inbox_notices.take()
    assert notice.kind == "tenant_dir" and notice.path == str(folder) and "no USER file" in notice.reason


def test_a_garbage_user_file_is_named_and_the_other_tenants_go_on(settings: Settings) -> None:
    add_episodes([{"user_id": "bob", "content": "stored first"}], settings)
    queue(settings, "alice", "queued for alice")
    queue(settings, "bob", "queued for bob")
    user_file = inbox.tenant_dir(settings, "alice") / inbox.USER_FILE
    user_file.write_bytes(b"\xff\xfe\x00garbage")
    inbox_notices.take()
    with db.open_store(settings) as con:
        result = fold_inbox(con, settings)
    assert result.tenants == ["bob"] and ("bob", "queued for bob") in _contents(settings)
    [notice] = [n for n in inbox_notices.take() if n.kind == "tenant_dir"]
    assert notice.path == str(user_file) and "not a user_id" in notice.reason
    assert [f["file"] for f in inbox_findings(settings)["inbox_tenant_dirs"]] == [str(user_file)]


def test_the_embedding_worker_keeps_running_and_logs_a_quarantine_once(settings: Settings) -> None:
    from engram.embed.models import HashEmbedder
    from engram.embed.worker import watch

    add_episodes([{"user_id": "bob", "content": "stored first"}], settings)
    queue(settings, "alice", "alice's queued record")
    bad = plant(settings, "alice", "random_bytes")
    queue(settings, "bob", "bob's queued record")
    inbox_notices.take()
    lines: list[str] = []

    class Logger:
        def warning(self, msg: str, *args: object) -> None:
            lines.append(msg % args)

        info = warning

    totals = watch(settings, HashEmbedder(settings.embed_dim), poll_s=0.01, max_seconds=0.3, logger=Logger())
    assert totals["passes"] >= 2 and ("bob", "bob's queued record") in _contents(settings)
    assert len([line for line in lines if bad.name in line]) == 1
