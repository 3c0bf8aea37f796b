"""Invariant checks: every sql/checks/*.sql returns the rows that break an invariant (empty = pass)."""

from __future__ import annotations

import polars as pl

from engram.store import db


def check_names() -> list[str]:
    """The names of every check file, sorted."""
    return sorted(p.stem for p in (db.SQL_DIR / "checks").glob("*.sql"))


def check_rows(con: db.Connection, name: str) -> pl.DataFrame:
    """The violating rows of one check."""
    return db.query(con, f"checks/{name}")


def run_checks(con: db.Connection) -> dict[str, int]:
    """Violations per check (0 everywhere = every invariant holds)."""
    return {name: check_rows(con, name).height for name in check_names()}
