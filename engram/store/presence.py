"""Whether a store exists: read commands refuse a missing (or mistyped) store instead of creating it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engram.errors import StoreMissing


def missing_store_error(path: Path | str, why: str = "") -> StoreMissing:
    """The one message for a store that is not there."""
    detail = f"{why}; " if why else ""
    return StoreMissing(f"no store at {path} ({detail}create one with `engram init` or `engram ingest`)")


def require_store(settings: Any) -> None:
    """Raise StoreMissing unless settings.db_path is a store file (sharded: at least one shard file is).

    The files found are noted as present (engram.store.db.note_present): removed while the command runs,
    they are never recreated.
    """
    from engram.store import db
    from engram.store.sharding import all_shard_settings

    base = Path(settings.db_path)
    if base.is_dir():
        raise missing_store_error(base, "it is a directory")
    found = [Path(s.db_path) for s in all_shard_settings(settings) if Path(s.db_path).is_file()]
    if not found:
        raise missing_store_error(base)
    for path in found:
        db.note_present(path)
