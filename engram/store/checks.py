"""Invariant checks: every sql/checks/*.sql returns the rows that break an invariant (empty = pass), and the
inbox's files set aside (quarantined segments, refused records, unreadable segments and tenant folders)."""

from __future__ import annotations

from typing import Any

import polars as pl

from engram.errors import InboxCorrupt
from engram.store import db, inbox

INBOX_CHECKS = ("inbox_quarantined", "inbox_rejected", "inbox_unreadable", "inbox_tenant_dirs")


def check_names() -> list[str]:
    """The names of every check file, sorted."""
    return sorted(p.stem for p in (db.SQL_DIR / "checks").glob("*.sql"))


def check_rows(con: db.Connection, name: str) -> pl.DataFrame:
    """The violating rows of one check."""
    return db.query(con, f"checks/{name}")


def run_checks(con: db.Connection) -> dict[str, int]:
    """Violations per check (0 everywhere = every invariant holds)."""
    return {name: check_rows(con, name).height for name in check_names()}


def inbox_findings(settings: Any) -> dict[str, list[dict[str, Any]]]:
    """Per inbox check, the files an operator must look at in this store's inbox (no memory text): segments
    quarantined (with the reason), files of refused records (with their count), segments that cannot be
    read but are not quarantined yet, and tenant folders that cannot be named."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in INBOX_CHECKS}
    for path, note in inbox.quarantined(settings):
        out["inbox_quarantined"].append({"file": str(path), "reason": note.get("reason"),
                                         "quarantined_at": note.get("quarantined_at")})
    for path, n in inbox.rejected_files(settings):
        out["inbox_rejected"].append({"file": str(path), "records": n})
    for path, reason in inbox.tenant_problems(settings):
        out["inbox_tenant_dirs"].append({"file": path, "reason": reason})
    for folder in sorted(p for p in inbox.root(settings).glob("*") if p.is_dir()):
        for seg in (s for s in sorted(folder.iterdir()) if inbox.is_segment_name(s.name)):
            try:
                inbox.load(seg)
            except InboxCorrupt as exc:
                out["inbox_unreadable"].append({"file": str(seg), "reason": str(exc)})
            except FileNotFoundError:  # folded or published meanwhile
                continue
    return out
