"""The on-disk layout of the search indexes: where a generation lives, its format, durable files, the atomic switch.

Layout under the index root (settings.index_dir, default <db_path>.indexes):

    <tenant key>/<table>-<model>-<dim>/CURRENT     names the live generation (replaced atomically)
    <tenant key>/<table>-<model>-<dim>/g<...>/      one generation: manifest.json, numpy arrays, columns.arrow,
                                                    ann.usearch and ann_rows.npy (engram.index.ann_graph)

A generation is written under a temporary name, fsynced and renamed, and only then named in CURRENT,
so a reader sees a whole old index or a whole new one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from hashlib import blake2b
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from engram import clock
from engram.errors import StoreError
from engram.index.bm25 import POSTING_ARRAYS
from engram.store.durable import fsync_dir

# A reader uses a generation of exactly this format. One of another format (written by an older engram)
# is unusable: the search falls back to the exact in-memory index and the next publish writes this one.
FORMAT = 7  # 7: lexical postings per passage of a long row (bm25_row_first)
MANIFEST = "manifest.json"
CURRENT = "CURRENT"
COLUMNS_FILE = "columns.arrow"  # every row's search columns (candidates.COLUMNS), in row order, Arrow IPC
LINKS_FILE = "links.arrow"  # a facts generation's (episode_id, fact_id) links, by episode id (optional)
# The rows' moments sorted, and the row of each: a window's rows are one binary search away, not a scan.
SORTED_MOMENTS, MOMENT_ORDER = "sorted_moments", "moment_order"
ARRAYS = ("rowids", "ids", "id_order", "prev", "next", "vec_row", "vec_pos", "vectors", "pending",
          "text_data", "text_offsets", SORTED_MOMENTS, MOMENT_ORDER, *POSTING_ARRAYS)
# A generation with a graph also keeps its vectors as float16 (half the pages): the nightly pair search
# rescores its graph candidates with them (engram.consolidate.neighbours). Queries keep float32 rescoring.
HALF_VECTORS = "vectors16"


class IndexUnusable(StoreError):
    """The on-disk index cannot serve this query (missing, stale, torn or of another format); search exactly instead."""


class IndexNotPublished(IndexUnusable):
    """No generation was ever published for this table (normal below search_index_min_rows)."""


def root(settings: Any) -> Path:
    """The index root of a store."""
    return Path(settings.index_dir) if settings.index_dir else Path(f"{settings.db_path}.indexes")


def index_dir(settings: Any, user_id: str, table: str, model: str, dim: int) -> Path:
    """Where the generations of one tenant's table (for one embedder) live."""
    tenant = blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model)[:60]
    return root(settings) / tenant / f"{table}-{slug}-{dim}"


def save_array(path: Path, array: np.ndarray) -> None:
    """A numpy array, fsynced."""
    with open(path, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


def save_table(path: Path, table: pa.Table) -> None:
    """An Arrow IPC file (uncompressed: readers map it), fsynced."""
    with open(path, "wb") as fh:
        with pa.ipc.new_file(fh, table.schema) as writer:
            writer.write_table(table)
        fh.flush()
        os.fsync(fh.fileno())


def save_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """The generation's manifest.json, fsynced; the files it lists are sized now."""
    with open(path / MANIFEST, "w") as fh:
        json.dump(manifest, fh)
        fh.flush()
        os.fsync(fh.fileno())


def read_manifest(path: Path) -> dict[str, Any]:
    """A generation's manifest (OSError or ValueError when it cannot be read)."""
    return json.loads((path / MANIFEST).read_text())


def new_generation(target: Path) -> tuple[str, Path]:
    """A fresh generation name under `target` and the temporary directory to write it in."""
    target.mkdir(parents=True, exist_ok=True)
    name = f"g{clock.now():%Y%m%dT%H%M%S%f}-{os.getpid()}"
    tmp = target / f".tmp-{name}"
    tmp.mkdir()
    return name, tmp


def switch_to(target: Path, tmp: Path, name: str) -> None:
    """Rename the written generation into place and name it in CURRENT (atomic on POSIX), then remove
    the older generations (readers that mapped one keep their open files)."""
    fsync_dir(tmp)
    os.rename(tmp, target / name)
    fsync_dir(target)
    pointer = target / f".{CURRENT}.tmp"
    pointer.write_text(name)
    with open(pointer) as fh:
        os.fsync(fh.fileno())
    os.replace(pointer, target / CURRENT)
    fsync_dir(target)
    for old in target.iterdir():
        if old.is_dir() and old.name != name:
            shutil.rmtree(old, ignore_errors=True)


def current(path: Path) -> str:
    """The name of the live generation under `path`; IndexNotPublished when there is none."""
    try:
        return (path / CURRENT).read_text().strip()
    except OSError:
        raise IndexNotPublished(f"no index at {path.name} (never published)") from None


def live_generation(target: Path) -> Path | None:
    """The directory of the generation CURRENT names under `target`, if there is one."""
    try:
        path = target / current(target)
    except IndexNotPublished:
        return None
    return path if path.is_dir() else None
