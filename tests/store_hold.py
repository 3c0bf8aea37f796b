"""Another process holding a store read-write for a block, as the night does (tests of the hot path)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LOCKER = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1])\n"
    "print('held', flush=True)\n"
    "sys.stdin.readline()\n"
)


@contextmanager
def held(settings: Any) -> Iterator[None]:
    """Another process holds the store read-write (as the night does) for the block."""
    holder = subprocess.Popen([sys.executable, "-c", LOCKER, str(settings.db_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
