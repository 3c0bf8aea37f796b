"""The dry run: the real stages on a private copy of the store, so the preview is what the real run does."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engram.settings import Settings
from engram.store import db


@contextmanager
def preview_copy(store: Settings) -> Iterator[Settings]:
    """Settings of a temporary copy of the store, its search indexes and an empty archive and snapshot
    directory; the copy is deleted when the block ends. The store itself is only read (after a checkpoint,
    so the file alone is the whole store).

    A copy costs the store's size in temporary disk and one read of it; in exchange the dry run shares
    every line of code with the real run and cannot drift from it.
    """
    tmp = Path(tempfile.mkdtemp(prefix="engram-dry-run-"))
    try:
        src = Path(store.db_path)
        copy = tmp / src.name
        with db.open_store(store) as con:  # never creates a store that is not there (presence check)
            db.execute(con, "queries/consolidate/checkpoint")
            shutil.copyfile(src, copy)
        indexes = Path(store.index_dir) if store.index_dir else Path(f"{src}.indexes")
        if indexes.is_dir():
            shutil.copytree(indexes, tmp / "indexes")
        yield store.model_copy(update={
            "db_path": copy, "index_dir": tmp / "indexes", "archive_dir": tmp / "archive",
            "snapshot_dir": tmp / "snapshots"})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
