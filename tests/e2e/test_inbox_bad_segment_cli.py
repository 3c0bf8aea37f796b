"""One bad segment in alice's inbox: the CLI quarantines it, names it, exits 1, and bob's records are stored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from engram.settings import Settings
from engram.store import inbox
from engram.store.ingest import add_episodes
from tests.store.inbox_bad_files import KINDS, plant, queue

ROOT = Path(__file__).resolve().parents[2]


def engram(*args: str) -> subprocess.CompletedProcess:
    """The CLI as a user types it (ENGRAM_DB_PATH and the hash embedder come from the settings fixture)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    return subprocess.run([sys.executable, "-m", "engram.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)


def _episodes(settings: Settings) -> set[tuple[str, str, str]]:
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        return set(con.execute("select user_id, content, status from episodes").fetchall())


def _setup(settings: Settings, kind: str) -> Path:
    add_episodes([{"user_id": "alice", "content": "stored first"}], settings)
    queue(settings, "alice", "the heron nests by the pond")
    bad = plant(settings, "alice", kind)
    queue(settings, "bob", "bob's otter swims at dusk")
    return bad


@pytest.mark.parametrize("kind", KINDS)
def test_embed_quarantines_a_bad_segment_and_folds_everything_else(settings: Settings, kind: str) -> None:
    bad = _setup(settings, kind)
    found = engram("search", "heron", "--user", "alice")  # a reader skips the bad file, moves nothing
    assert found.returncode == 0, found.stderr
    assert "heron" in found.stdout and bad.exists()

    run = engram("embed")
    assert run.returncode == 1, run.stdout + run.stderr
    moved = bad.parent / inbox.QUARANTINE / bad.name
    assert not bad.exists() and moved.exists() and (moved.parent / f"{bad.name}.reason.json").exists()
    assert str(moved) in run.stderr and "error [inbox_corrupt]" in run.stderr
    assert "1 inbox segment(s) quarantined" in run.stdout
    stored = _episodes(settings)
    assert ("bob", "bob's otter swims at dusk", "active") in stored
    assert ("alice", "the heron nests by the pond", "active") in stored

    check = engram("check")
    assert check.returncode == 1
    assert "FAIL inbox_quarantined: 1" in check.stdout and bad.name in check.stdout

    again = engram("embed")  # the quarantine was reported once; nothing new is wrong
    assert again.returncode == 0, again.stderr


def test_consolidate_quarantines_a_bad_segment_and_runs_every_tenant(settings: Settings) -> None:
    bad = _setup(settings, "random_bytes")
    run = engram("consolidate")
    assert run.returncode == 1, run.stdout + run.stderr
    moved = bad.parent / inbox.QUARANTINE / bad.name
    assert moved.exists() and str(moved) in run.stderr
    assert {("bob", "bob's otter swims at dusk"), ("alice", "the heron nests by the pond")} <= {
        (u, c) for u, c, _ in _episodes(settings)}


def test_a_garbage_user_file_is_named_and_bob_is_folded(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "stored first"}], settings)
    queue(settings, "alice", "queued for alice")
    queue(settings, "bob", "queued for bob")
    user_file = inbox.tenant_dir(settings, "alice") / inbox.USER_FILE
    user_file.write_bytes(b"\xff\xfe garbage")
    run = engram("embed")
    assert run.returncode == 1
    assert str(user_file) in run.stderr and "not valid Unicode" not in run.stderr
    assert ("bob", "queued for bob", "active") in _episodes(settings)
