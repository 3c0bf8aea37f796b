"""Subprocess body: ingest `n` batches of 10 episodes for tenant 'writer', or read `n` times; prints waits."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta

from engram.settings import load_settings
from engram.store import db
from engram.store.ingest import add_episodes

if __name__ == "__main__":
    mode, n = sys.argv[1], int(sys.argv[2])
    settings = load_settings()
    waits = []
    for i in range(n):
        t = time.perf_counter()
        if mode == "write":
            rows = [{"id": f"w-{i}-{j}", "user_id": "writer", "content": f"concurrent note {i} {j}",
                     "created_at": datetime(2026, 1, 1) + timedelta(minutes=i * 10 + j)} for j in range(10)]
            add_episodes(rows, settings)
        else:
            with db.connect(settings.db_path, read_only=True, lock_timeout_s=settings.lock_timeout_s) as con:
                db.rows(con, "queries/store/count_episodes")
        waits.append(time.perf_counter() - t)
        time.sleep(0.05)
    print(max(waits))
