"""`engram embed --watch`: an episode added while it runs is embedded within seconds; SIGTERM exits 0."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes

ROOT = Path(__file__).resolve().parents[2]


def _status(settings: Settings, episode_id: str) -> str | None:
    """The stored episode's status; None while it waits in the inbox (written while the worker watches:
    ENGRAM_HOT_PATH=auto, the default, then writes there and the worker folds it)."""
    with db.open_store(settings) as con:
        rows = con.execute("select status from episodes where id = ?", [episode_id]).fetchall()
    return rows[0][0] if rows else None


@pytest.mark.slow
def test_watch_embeds_a_new_episode_within_seconds_and_exits_0_on_sigterm(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "before the worker", "created_at": "2026-11-01T09:00:00Z"}],
                 settings)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # ENGRAM_DB_PATH and ENGRAM_EMBEDDER=hash from the fixture
    proc = subprocess.Popen([sys.executable, "-m", "engram.cli", "embed", "--watch", "--poll-s", "0.5"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "watching the embedding queue every 0.5 s" in proc.stderr.readline()
        added = add_episodes([{"user_id": "alice", "content": "I moved to Lisbon",
                               "created_at": "2026-11-01T10:00:00Z"}], settings).ids[0]
        start = time.monotonic()
        while _status(settings, added) != "active":
            assert time.monotonic() - start < 10, "not embedded within 10 s"
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    # counts only, no memory text on the terminal; the episode added before the worker started may be in
    # its first pass or in the same pass as the new one
    assert re.search(r"embedded [12] episode\(s\), 0 fact\(s\)", out), out
    assert "Lisbon" not in out + err and "stopped after" in err
