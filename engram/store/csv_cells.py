"""How long a CSV cell the file reader takes: Python's csv stops at 131,072 characters, below a memory's limit."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager

# Well above the content limit (1,000,000 characters, engram.store.ingest.MAX_CONTENT_CHARS), so an overlong
# memory is that row's error, named by line and field, and not a rejected file; a cell longer than this still
# rejects the file (the csv module cannot skip one cell).
MAX_CSV_CELL_CHARS = 16 * 1024 * 1024


@contextmanager
def csv_cells_up_to(limit: int = MAX_CSV_CELL_CHARS) -> Iterator[None]:
    """Let the csv module read cells up to `limit` characters, then restore its (process-wide) limit."""
    previous = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(previous)
