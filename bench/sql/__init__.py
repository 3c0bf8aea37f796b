"""Benchmark-only SQL, kept out of the wheel: named like the product's, run with $params through engram.store.db."""

from pathlib import Path

SQL_DIR = Path(__file__).parent


def named(name: str) -> Path:
    """The file of one benchmark statement, for db.query / db.rows / db.execute."""
    return SQL_DIR / f"{name}.sql"
