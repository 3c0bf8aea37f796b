"""Per process: the mapped generation of each tenant's table and its current delta; the index a search uses."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pyarrow as pa

from engram.index.delta import check_against_store, mask_deleted, read_delta
from engram.index.disk import IndexNotPublished, IndexUnusable, current, index_dir
from engram.index.generation import Generation
from engram.index.merged import PersistedTableIndex
from engram.index.published import PUBLISHED, pending_rows
from engram.index.vector_index import (
    CACHE,
    PendingFill,
    TableIndex,
    resolved,
    table_signature,
    wants_fill,
)
from engram.store import db

log = logging.getLogger(__name__)


class PersistedCache:
    """Per process: the mapped generation of each (store, tenant, table, model, dim) and its current delta."""

    def __init__(self) -> None:
        self._gens: dict[tuple, tuple[str, Generation]] = {}
        self._indexes: dict[tuple, PersistedTableIndex] = {}
        self._broken: dict[tuple, str] = {}
        self._warned: set[tuple] = set()
        self._lock = threading.Lock()
        self.loads = 0

    def get(self, con: db.Connection, settings: Any, table: str, user_id: str, model: str, dim: int,
            signature: tuple | None = None, fill: PendingFill | None = None,
            extra: pa.Table | None = None) -> PersistedTableIndex:
        """The published index with the store's newer rows merged in (`fill`: its pending rows embedded on
        the fly); IndexUnusable when there is none usable."""
        path = index_dir(settings, user_id, table, model, dim)
        key = (resolved(settings.db_path), user_id, table, model, dim)
        name = current(path)
        with self._lock:
            if self._broken.get(key) == name:
                raise IndexUnusable(f"{table} index generation {name} was found stale in this process")
            held = self._gens.get(key)
        if held is None or held[0] != name:
            gen = Generation(path / name, user_id, table, model, dim)
            self._or_broken(key, name, check_against_store, con, gen, table, user_id)
            with self._lock:
                self._gens[key] = (name, gen)
                self._indexes.pop(key, None)
                self.loads += 1
        else:
            gen = held[1]
        if signature is None:
            signature = table_signature(con, table, user_id)
        with self._lock:
            index = self._indexes.get(key)
        if index is not None and index.gen is gen and index.signature == signature and not wants_fill(index.delta, fill):
            return index
        delta, columns = read_delta(con, gen, table, user_id, model, dim, signature, fill, extra)
        index = PersistedTableIndex(gen, delta, columns, signature, key)
        if index.live_rows() != signature[0]:
            self._or_broken(key, name, mask_deleted, con, index, table, user_id)
        with self._lock:
            self._indexes[key] = index
        return index

    def _or_broken(self, key: tuple, name: str, check: Any, *args: Any) -> None:
        """Run a check of generation `name`; when it finds the generation unusable, search exactly until a
        publish writes a new one."""
        try:
            check(*args)
        except IndexUnusable:
            with self._lock:
                self._broken[key] = name
            raise

    def first_warning(self, key: tuple) -> bool:
        """True the first time a fallback reason is seen in this process (one warning, not one per query)."""
        with self._lock:
            if key in self._warned:
                return False
            self._warned.add(key)
            return True

    def clear(self) -> None:
        with self._lock:
            self._warned.clear()
            self._gens.clear()
            self._indexes.clear()
            self._broken.clear()


PERSISTED = PersistedCache()


def table_index(con: db.Connection, settings: Any, table: str, user_id: str, model: str, dim: int,
                signature: tuple | None = None, fill: PendingFill | None = None) -> TableIndex:
    """The index a search of (tenant, table) uses: the published one with the delta merged in, or, when
    there is none usable (or settings.search_index is off), the exact in-memory one (`signature`: the
    table's signature row when the caller has just read it; `fill`: embed its pending rows on the fly)."""
    if con is None:  # another process holds the store: what was published, and the inbox
        return PUBLISHED.index(settings, table, user_id, model, dim, fill)
    extra = None
    if table == "episodes":
        extra, inbox_sig = pending_rows(con, settings, user_id, model, dim)
        if extra.num_rows:  # rows written while the store was held and not folded yet are searched too
            signature = signature or table_signature(con, table, user_id)
            signature = (signature[0] + extra.num_rows, *signature[1:3], inbox_sig)
    if settings.search_index and table in ("episodes", "facts"):
        try:
            return PERSISTED.get(con, settings, table, user_id, model, dim, signature, fill, extra)
        except IndexNotPublished:
            # normal for a table below search_index_min_rows; a warning only where publish would write one
            signature = signature or table_signature(con, table, user_id)
            if signature[0] >= settings.search_index_min_rows and PERSISTED.first_warning(
                    (str(settings.db_path), user_id, table, model, dim, "never published")):
                log.warning("%s index never published; searching exactly (the next publish writes it)", table)
        except IndexUnusable as exc:
            if PERSISTED.first_warning((str(settings.db_path), user_id, table, model, dim, str(exc))):
                log.warning("%s; searching exactly (the next publish writes the index)", exc)
    return CACHE.get(con, settings.db_path, table, user_id, model, dim, signature, fill, extra)
