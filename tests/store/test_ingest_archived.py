"""Re-ingesting a file whose episodes were archived does not bring them back (restore does)."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.archive import ops as archive
from engram.archive.nightly import archive_due
from engram.store import db
from engram.store.ingest import add_episodes

ROWS = [{"id": "e1", "user_id": "u", "content": "an old note", "created_at": "2026-01-01T00:00:00"}]


def test_archived_episode_is_not_reingested(settings) -> None:
    assert add_episodes(ROWS, settings).inserted == 1
    marked_at = datetime(2026, 1, 2)
    archive.mark_removal(settings, "u", ["e1"], table="episodes", now=marked_at)
    counts = archive_due(settings, "u", marked_at + timedelta(days=settings.retention_days + 1), "run-arch")
    assert counts["archived_episodes"] == 1
    result = add_episodes(ROWS, settings)
    assert (result.inserted, result.duplicates) == (0, 1)
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from episodes").fetchall()[0][0] == 0
