"""Removing a tenant's directories (inbox, search indexes) and counting what they held."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from engram.store.durable import fsync_dir


@dataclass
class Removed:
    """Files and bytes removed (or, in a dry run, that would be)."""

    files: int = 0
    bytes: int = 0

    def add(self, other: Removed) -> None:
        """Count another removal in this one."""
        self.files += other.files
        self.bytes += other.bytes

    def to_dict(self) -> dict[str, int]:
        return {"files": self.files, "bytes": self.bytes}


def measure(path: Path) -> Removed:
    """The files and bytes under path (a file or a directory; symlinks counted, never followed)."""
    if path.is_symlink() or path.is_file():
        return Removed(1, path.lstat().st_size)
    out = Removed()
    if not path.is_dir():
        return out
    for folder, _dirs, names in os.walk(path):
        for name in names:
            out.add(Removed(1, (Path(folder) / name).lstat().st_size))
    return out


def remove_tree(path: Path, dry_run: bool) -> Removed:
    """Delete a file or directory (symlinks are removed, not followed); what it held."""
    found = measure(path)
    if dry_run or not (path.exists() or path.is_symlink()):
        return found
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    if path.parent.is_dir():
        fsync_dir(path.parent)
    return found
