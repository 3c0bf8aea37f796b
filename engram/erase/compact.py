"""Rewrite a store file so no deleted bytes remain: copy it into a fresh file, verify, swap it in.

DuckDB marks deleted rows' blocks free and reuses them later; until then their bytes stay in the
file. A copy (COPY FROM DATABASE into a new file) holds only live rows. The store stays locked
throughout: the old file is open until the fresh one has replaced it, and the fresh one is opened
(so locked) before the rename, so a process waiting for the store opens the fresh file, never the
old one, and nothing it writes is lost.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.erase.catalog import quote_identifier
from engram.errors import StoreError
from engram.store import db
from engram.store.durable import fsync_dir


@dataclass
class Rewrite:
    """The store file's size before and after its rewrite (after: 0 until the rewrite is done)."""

    path: Path
    bytes_before: int
    bytes_after: int = 0
    tables: dict[str, int] = field(default_factory=dict)


@contextmanager
def rewritten_store(settings: Any) -> Iterator[tuple[db.Connection, Rewrite]]:
    """The store open and locked for the block; when the block succeeds, the file is rewritten without
    the bytes of what the block deleted. An error in the block leaves the file as the block left it."""
    path = Path(settings.db_path)
    with ExitStack() as old:
        con = old.enter_context(db.open_store(settings))
        done = Rewrite(path, path.stat().st_size)
        yield con, done
        fresh = copy_store(con, path, done)
        try:
            with db.connect(fresh, lock_timeout_s=0.0):  # the fresh file is locked before anyone can open it
                wal = Path(f"{path}.wal")
                if wal.exists() and wal.stat().st_size:
                    raise StoreError(f"store {path}: a WAL is left after the checkpoint; the store was not replaced")
                os.replace(fresh, path)
                fsync_dir(path.parent)
                old.close()  # the old file's last connection: its blocks go with it
        finally:
            for leftover in (fresh, Path(f"{fresh}.wal")):
                leftover.unlink(missing_ok=True)
        done.bytes_after = path.stat().st_size


def copy_store(con: db.Connection, path: Path, done: Rewrite) -> Path:
    """Copy the open store into a new file beside it, verified table by table and fsynced; its path."""
    db.execute(con, "erase/checkpoint")
    fresh = path.with_name(f".{path.name}.forget-{os.getpid()}-{secrets.token_hex(4)}")
    [(database,)] = db.rows(con, "erase/current_database")
    tables = [name for name, _ in db.rows(con, "erase/tenant_tables")]
    db.execute(con, "erase/attach_copy", path=str(fresh))
    try:
        try:
            con.execute(db.sql("erase/copy_database").replace("{database}", quote_identifier(database)))
            before = {t: _rows(con, t) for t in tables}
            after = {t: _rows(con, f"erase_copy.{t}") for t in tables}
            sequences = (db.rows(con, "erase/sequences", database=database),
                         db.rows(con, "erase/sequences", database="erase_copy"))
        finally:
            db.execute(con, "erase/detach_copy")
        if before != after or sequences[0] != sequences[1]:
            bad = sorted(t for t in tables if before[t] != after.get(t))
            raise StoreError(f"store {path}: the rewritten copy differs ({bad or 'sequences'}); the store was kept")
        with open(fresh, "rb+") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        for leftover in (fresh, Path(f"{fresh}.wal")):
            leftover.unlink(missing_ok=True)
        raise
    done.tables = before
    return fresh


def _rows(con: db.Connection, table: str) -> int:
    return int(db.rows(con, "erase/table_rows", table=table)[0][0])
