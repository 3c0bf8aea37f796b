"""Durable file steps shared by the archive, the read snapshot and the on-disk search indexes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO


def fsync_dir(path: Path) -> None:
    """fsync a directory, so a rename or a new file in it survives a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_then_rename(path: Path, write: Callable[[BinaryIO], Any], tmp: Path) -> None:
    """Write a file whole through `tmp` (write, flush, fsync) and rename it over `path`: a reader sees the
    old file or the new one, never part of it; `tmp` is removed when any step fails. The caller fsyncs
    the directory (fsync_dir) once it means the rename to last."""
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
