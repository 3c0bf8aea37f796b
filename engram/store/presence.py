"""Whether a store exists: read commands refuse a missing (or mistyped) store instead of creating it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engram.errors import StoreMissing

_seen: set[str] = set()  # store paths (resolved) this process has found present or opened


def note_present(path: Path | str) -> None:
    """This process found (or opened) a store at path: if it is removed later, no open recreates it."""
    _seen.add(str(Path(path).resolve()))


def was_present(path: Path | str) -> bool:
    """Whether this process has found a store at path before (note_present)."""
    return str(Path(path).resolve()) in _seen


def forget(path: Path | str) -> None:
    """This process removed the store at path on purpose: a later open may create it afresh."""
    _seen.discard(str(Path(path).resolve()))


def missing_store_error(path: Path | str, why: str = "") -> StoreMissing:
    """The one message for a store that is not there."""
    detail = f"{why}; " if why else ""
    return StoreMissing(f"no store at {path} ({detail}create one with `engram init` or `engram ingest`)")


def require_store(settings: Any) -> None:
    """Raise StoreMissing unless settings.db_path is a store file (sharded: at least one shard file is).

    The files found are noted as present (note_present): removed while the command runs, they are never
    recreated.
    """
    from engram.store.sharding import all_shard_settings

    base = Path(settings.db_path)
    if base.is_dir():
        raise missing_store_error(base, "it is a directory")
    found = [Path(s.db_path) for s in all_shard_settings(settings) if Path(s.db_path).is_file()]
    if not found:
        raise missing_store_error(base)
    for path in found:
        note_present(path)
