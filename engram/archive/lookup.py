"""Archived facts by id: their row as the archive file holds it, and when and by which run they left."""

from __future__ import annotations

import logging
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.archive.files import read_matching
from engram.settings import Settings
from engram.store import db

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ArchivedFact:
    """A fact that left the live table for the archive (row None when its file cannot be read)."""

    id: str
    archived_at: datetime
    archive_run_id: str
    row: dict[str, Any] | None

    @property
    def shown_text(self) -> str:
        """The text to show: '(private)' for a private fact, '(archived)' when the file is unreadable."""
        if self.row is None:
            return "(archived)"
        return "(private)" if self.row.get("is_private") else str(self.row.get("text") or "")

    def restore_command(self, user_id: str) -> str:
        """The command that brings it back."""
        return f"engram restore --user {shlex.quote(user_id)} {shlex.quote(self.id)}"


def archived_facts(con: db.Connection, settings: Settings, user_id: str, ids: Iterable[str]) -> dict[str, ArchivedFact]:
    """The tenant's archived (not restored) facts among `ids`, each with its archived row."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    files = db.rows(con, "queries/archive/archive_fact_files", user_id=user_id, ids=wanted)
    out: dict[str, ArchivedFact] = {}
    by_path: dict[str, list[str]] = {}
    for row_id, path, archived_at, run_id in files:
        if row_id not in out:  # the newest archive entry of a fact
            out[row_id] = ArchivedFact(row_id, archived_at, run_id, None)
            by_path.setdefault(path, []).append(row_id)
    for path, row_ids in by_path.items():
        try:
            rows = read_matching(Path(settings.archive_dir) / path, "id", row_ids).to_pylist()
        except OSError as exc:  # a missing or unreadable file: the fact is still known as archived
            log.warning("archive file unreadable: %s (%s)", path, type(exc).__name__)
            continue
        for row in rows:
            if row.get("user_id") == user_id and row["id"] in out:
                row.pop("embedding", None)
                out[row["id"]] = ArchivedFact(row["id"], out[row["id"]].archived_at, out[row["id"]].archive_run_id, row)
    return out
