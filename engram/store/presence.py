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
    """Raise StoreMissing unless settings.db_path is a store file (sharded: at least one shard file is)."""
    from engram.store.sharding import all_shard_settings

    base = Path(settings.db_path)
    if base.is_dir():
        raise missing_store_error(base, "it is a directory")
    if not any(Path(s.db_path).is_file() for s in all_shard_settings(settings)):
        raise missing_store_error(base)
