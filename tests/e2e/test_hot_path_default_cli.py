"""Default settings, as a user types the commands: without a worker `engram ingest` stores at once; while
`engram embed --watch` runs it queues in the inbox, a search finds the episode at once and the worker folds
it in; after the worker stops, writes go to the store again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engram.settings import Settings
from engram.store import db, hot_path

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # ENGRAM_DB_PATH and ENGRAM_EMBEDDER=hash from the fixture
    env.pop("ENGRAM_HOT_PATH", None)
    return env


def _engram(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engram.cli", *args], env=_env(), capture_output=True, text=True,
                          timeout=120)


def _ingest(tmp_path: Path, name: str, content: str, at: str) -> dict:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps({"user_id": "alice", "content": content, "created_at": at}) + "\n")
    done = _engram("ingest", str(path), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _stored(settings: Settings) -> list[str]:
    with db.open_store(settings, read_only=True) as con:  # waits while the worker holds the store
        return [c for (c,) in con.execute("select content from episodes order by content").fetchall()]


@pytest.mark.slow
def test_default_hot_path_follows_the_embedding_worker(settings: Settings, tmp_path: Path) -> None:
    first = _ingest(tmp_path, "a", "I work at Acme as a data engineer.", "2026-11-02T09:00:00Z")
    assert (first["inserted"], first["queued"]) == (1, 0)  # no worker: the store has it at once
    assert _stored(settings) == ["I work at Acme as a data engineer."]
    worker = subprocess.Popen([sys.executable, "-m", "engram.cli", "embed", "--watch", "--poll-s", "0.3"],
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        start = time.monotonic()
        while not hot_path.worker_watching(settings):
            assert time.monotonic() - start < 60, "the worker never marked the store"
            assert worker.poll() is None, worker.stderr.read()
            time.sleep(0.1)
        queued = _ingest(tmp_path, "b", "The heron nests by the pond.", "2026-11-02T10:00:00Z")
        assert (queued["inserted"], queued["queued"]) == (0, 1)  # the worker folds it: the store was not opened
        found = _engram("search", "heron", "--user", "alice", "--json")
        assert found.returncode == 0, found.stderr
        assert [h["text"] for h in json.loads(found.stdout)["results"]] == ["The heron nests by the pond."]
        while _stored(settings) != ["I work at Acme as a data engineer.", "The heron nests by the pond."]:
            assert time.monotonic() - start < 60, "the worker never folded the queued episode"
            time.sleep(0.2)
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert worker.returncode == 0, err
    assert not hot_path.worker_mark(settings).exists()  # a stopped worker leaves no mark
    after = _ingest(tmp_path, "c", "I moved to Lisbon in October.", "2026-11-03T09:00:00Z")
    assert (after["inserted"], after["queued"]) == (1, 0)
    assert "I moved to Lisbon in October." in _stored(settings)
