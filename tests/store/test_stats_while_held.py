"""`engram stats` and the MCP stats tool answer while the night holds the store: from the read snapshot,
with the episodes written since counted apart; never a wait unless asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from engram import clock
from engram.consolidate.runner import consolidate_tenants
from engram.settings import Settings
from engram.store.ingest import add_episodes
from engram.store.snapshot import publish_snapshot
from engram.store.stats import counts
from tests.store_hold import held

EPISODES = [
    {"user_id": "alice", "content": "I work at Acme as a data engineer.", "created_at": "2026-11-02T09:00:00Z"},
    {"user_id": "alice", "content": "I moved to Lisbon in October.", "created_at": "2026-11-02T09:01:00Z"},
    {"user_id": "bob", "content": "I play the cello.", "created_at": "2026-11-02T10:00:00Z"},
]


def _seeded(settings: Settings) -> None:
    add_episodes(EPISODES, settings)
    consolidate_tenants(settings, "run-stats", clock.as_naive_utc("2026-11-05T03:00:00"))
    publish_snapshot(settings, run_id="run-stats")


def _table(rows: list[tuple], table: str) -> dict[str, int]:
    return {status: int(n) for t, _user, status, n in rows if t == table}


def test_counts_while_held_come_from_the_snapshot_and_count_the_inbox_apart(settings: Settings) -> None:
    _seeded(settings)
    live = counts(settings, "alice")
    assert live.source == "store"
    with held(settings):
        add_episodes([{"user_id": "alice", "content": "I started learning Portuguese."}], settings)  # queued
        t = time.perf_counter()
        found = counts(settings, "alice")
        assert time.perf_counter() - t < settings.lock_timeout_s / 2  # no wait for the lock
    assert (found.source, found.includes_private, found.inbox_since) == ("snapshot", False, 1)
    # what the snapshot exported is what the store held then (the write since is the inbox's)
    for table in ("episodes", "facts", "fact_sources", "fact_events", "llm_reviews"):
        assert _table(found.rows, table) == _table(live.rows, table), table
    assert {u for _t, u, _s, _n in found.rows} == {"alice"}
    assert found.contradictions == live.contradictions


def test_engram_stats_while_held_prints_the_snapshot_counts_at_once(settings: Settings, tmp_path: Path) -> None:
    _seeded(settings)
    engram = str(Path(sys.executable).parent / "engram")
    env = {**os.environ, "ENGRAM_DB_PATH": str(settings.db_path)}
    with held(settings):
        t = time.perf_counter()
        out = subprocess.run([engram, "stats", "--user", "alice", "--json"], check=False, capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=120)
        seconds = time.perf_counter() - t
    assert out.returncode == 0, out.stderr
    assert seconds < settings.lock_timeout_s / 2
    assert "counts from the read snapshot" in out.stderr and "0 episode(s) written since" in out.stderr
    rows = json.loads(out.stdout)
    assert {r["table"] for r in rows} >= {"episodes", "facts"} and {r["user_id"] for r in rows} == {"alice"}
