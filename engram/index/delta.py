"""What a published generation lacks, read exactly from the store: the delta, and the rows deleted since.

A reader reads rows above the generation's row watermark, rows updated since `covered`, and rows that
had no vector when it was written. When the store holds fewer rows than the generation and the delta
account for, the deleted ones are found by rowid and masked. A generation whose rowids no longer name
its rows (a store recreated at the same path) is unusable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from engram.arrays import unique_sorted
from engram.index.disk import IndexUnusable
from engram.index.generation import Generation
from engram.index.merged import PersistedTableIndex
from engram.index.vector_index import PendingFill, TableIndex, index_of_rows
from engram.store import db

CHECK_ROWS = 16  # rows of a generation whose (rowid, id) a reader checks against the store when it opens it


def check_sample(rowids: np.ndarray, ids: np.ndarray) -> list[list[Any]]:
    """(rowid, id) of up to CHECK_ROWS rows spread over the generation, first and last included."""
    if len(rowids) == 0:
        return []
    at = unique_sorted(np.linspace(0, len(rowids) - 1, min(CHECK_ROWS, len(rowids))).astype(np.int64))
    return [[int(rowids[i]), str(ids[i])] for i in at]


def check_against_store(con: db.Connection, gen: Generation, table: str, user_id: str) -> None:
    """IndexUnusable unless the store still holds the generation's sampled rows at their rowids.

    A store deleted and created again at the same path restarts its rowids: without this check its new
    rows below the old watermark would never be searched, and the old rowids would name other rows.
    """
    sample = check_sample(np.asarray(gen.arrays["rowids"]), np.asarray(gen.arrays["ids"]))
    if not sample:
        return
    found = dict(db.rows(con, f"queries/index/index_check_{table}", user_id=user_id, row_ids=[r for r, _ in sample]))
    # a sampled row deleted since the publish is normal (forget, archive); another row in its place is not
    if not found or any(found.get(rowid, id_) != id_ for rowid, id_ in sample):
        raise IndexUnusable(f"{table} index: stale (the store no longer holds its rows: recreated or compacted)")


def read_delta(con: db.Connection, gen: Generation, table: str, user_id: str, model: str, dim: int,
               signature: tuple, fill: PendingFill | None = None, extra: pa.Table | None = None
               ) -> tuple[TableIndex, pa.Table]:
    """The rows the generation does not hold as they are now (stored after it, updated since, or
    unembedded then) and their search columns, in the same order (`extra`: inbox rows the store does
    not hold yet, with the same columns, appended)."""
    max_rowid = gen.manifest["max_rowid"]
    params = {"user_id": user_id, "model": model, "dim": dim}
    rows = db.query_arrow(con, f"queries/index/query_index_delta_{table}", **params,
                          max_rowid=-1 if max_rowid is None else max_rowid, covered=gen.covered)
    pending = [str(x) for x in gen.arrays["pending"]]
    if pending:  # a separate, rarer query: an id list in the same filter would make DuckDB read every row
        earlier = db.query_arrow(con, f"queries/index/query_index_pending_{table}", **params, pending=pending)
        # an update can move a row to a new rowid: then it is in both sets, and counts once
        moved = np.isin(np.asarray(earlier["id"].to_pylist(), dtype=object), rows["id"].to_pylist())
        earlier = earlier.filter(pa.array(~moved))
        rows = pa.concat_tables([earlier, rows.cast(earlier.schema)])
    rows = with_extra(rows, extra)
    return index_of_rows(rows, table, dim, signature, fill=fill), rows.select(list(gen.columns.column_names))


def with_extra(rows: pa.Table, extra: pa.Table | None) -> pa.Table:
    """rows followed by the extra rows (inbox rows, engram.index.published), in rows' columns and types."""
    if extra is None or not extra.num_rows:
        return rows
    return pa.concat_tables([rows, extra.select(rows.column_names).cast(rows.schema)])


def mask_deleted(con: db.Connection, index: PersistedTableIndex, table: str, user_id: str) -> None:
    """Mask the generation's rows deleted from the store since it was written (the store counts fewer
    rows than the generation and the delta hold); IndexUnusable when the counts still disagree."""
    check_against_store(con, index.gen, table, user_id)  # rowids still name the same rows (no compaction)
    live = np.asarray([r for (r,) in db.rows(con, f"queries/index/index_live_rowids_{table}", user_id=user_id,
                                                max_rowid=-1 if index.gen.manifest["max_rowid"] is None
                                                else index.gen.manifest["max_rowid"])], dtype=np.int64)
    base_rowids = np.asarray(index.gen.arrays["rowids"])
    gone = np.flatnonzero(~np.isin(base_rowids, live))
    if len(gone):
        index.mark_dead(gone)
    if index.live_rows() != index.signature[0]:
        raise IndexUnusable(f"{table} index: stale (the store holds {index.signature[0]} rows, the index "
                            f"and its delta {index.live_rows()})")
