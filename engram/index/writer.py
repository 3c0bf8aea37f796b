"""Publish: write a new generation of a tenant's table index from one snapshot of the store, and switch it in.

A generation holds every row's text, vector and search columns (status, validity, confidence, privacy,
tags, ...: what candidates.eligible decides by), read in one snapshot. Its manifest records the run,
the row watermark (the table's highest rowid) and the newest update it covers (`covered`: every update
of facts and episodes sets changed_at), from which a reader reads the delta (engram.index.delta).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engram import clock
from engram.errors import StoreError
from engram.index.ann_graph import GraphParams, write_graph
from engram.index.bm25 import postings
from engram.index.disk import (
    COLUMNS_FILE,
    CURRENT,
    FORMAT,
    HALF_VECTORS,
    LINKS_FILE,
    MOMENT_ORDER,
    SORTED_MOMENTS,
    index_dir,
    live_generation,
    new_generation,
    save_array,
    save_manifest,
    save_table,
    switch_to,
)
from engram.index.passages import passage_docs
from engram.index.vector_index import (
    TableIndex,
    build_index,
    table_signature,
    text_list,
    unit_signatures,
)
from engram.index.windows import row_moments
from engram.store import db, inbox
from engram.text.tokens import tokenize

log = logging.getLogger(__name__)

ANN_MIN = 50_000      # from this many vectors a generation carries an ANN graph; below, exact matmul
ANN_DTYPE = "i8"      # quantised graph vectors; exact float32 rescoring (bench/perf/SEARCH.md)
# Graph links per node and nodes visited per insert: the recall@10 after rescoring they give, against
# build time, is in bench/perf/SEARCH.md and bench/perf/ann_params.py.
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 128


def _aligned_columns(columns: pa.Table, rowids: np.ndarray, table: str) -> pa.Table:
    """The search columns in the index's row order (both were read in one snapshot, so every rowid is there)."""
    have = columns["row_id"].to_numpy().astype(np.int64)
    order = np.argsort(have, kind="stable")
    at = np.searchsorted(have[order], rowids)
    take = order[np.minimum(at, max(len(have) - 1, 0))]
    if len(rowids) and (len(have) == 0 or not np.array_equal(have[take], rowids)):
        raise StoreError(f"{table} index: the search columns and the rows disagree (not one snapshot)")
    kept = [c for c in columns.column_names if c not in ("row_id", "id", "changed_at")]  # ids: the index has them
    return columns.take(pa.array(take, pa.int64())).select(kept)


def _arrays(index: TableIndex, columns: pa.Table, table: str) -> dict[str, np.ndarray]:
    """Every array of a generation (disk.ARRAYS) from the index and its aligned search columns."""
    arrays: dict[str, np.ndarray] = {
        "rowids": index.rowids, "ids": np.array(index.ids, dtype=str) if index.n else np.zeros(0, "U1"),
        "prev": index.prev, "next": index.next, "vec_row": index.vec_row, "vec_pos": index.vec_pos,
        "vectors": np.ascontiguousarray(index.matrix, dtype=np.float32),
    }
    arrays["id_order"] = np.argsort(arrays["ids"], kind="stable").astype(np.int64)
    moments = row_moments(columns, table)
    arrays[MOMENT_ORDER] = np.argsort(moments, kind="stable").astype(np.int64)
    arrays[SORTED_MOMENTS] = moments[arrays[MOMENT_ORDER]]
    pending = np.flatnonzero(index.vec_row < 0)
    arrays["pending"] = arrays["ids"][pending] if len(pending) else np.zeros(0, "U1")
    texts = text_list(index.texts)
    arrays |= postings(*passage_docs(texts, tokenize))  # a long text: one document per passage
    encoded = [t.encode("utf-8") for t in texts]
    arrays["text_offsets"] = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(b) for b in encoded], out=arrays["text_offsets"][1:])
    arrays["text_data"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return arrays


def write(con: db.Connection, settings: Any, table: str, user_id: str, model: str, dim: int,
          run_id: str | None = None, signature: tuple | None = None) -> dict[str, Any]:
    """Write a new generation of one tenant's table index and switch it in; older generations are removed."""
    t0 = time.perf_counter()
    signature = signature or table_signature(con, table, user_id)
    watermark = signature[2]  # newest row time, for the record
    # taken before the snapshot: an update committed after it sets a later changed_at
    read_at = datetime.now(UTC).replace(tzinfo=None)
    with db.transaction(con):  # one snapshot: the rows, their columns and both watermarks agree
        max_rowid = db.rows(con, f"queries/index/index_max_rowid_{table}")[0][0]
        index = build_index(con, table, user_id, model, dim, signature)
        columns = db.query_arrow(con, f"queries/index/index_columns_{table}", user_id=user_id)
        links = db.query_arrow(con, "queries/index/index_links_facts", user_id=user_id) if table == "facts" else None
    newest_update = pc.max(columns["changed_at"]).as_py() if columns.num_rows else None
    # readers read again the rows updated after this: the newest update in the snapshot (one statement
    # gives every row it updates the same time, so `after`, not `from`, keeps a night's last stage out of
    # every reader's delta), or the time just before the snapshot when no row was ever updated
    covered = min(newest_update, read_at) if newest_update else read_at
    columns = _aligned_columns(columns, index.rowids, table)
    arrays = _arrays(index, columns, table)
    n_vec = int(index.matrix.shape[0])
    target = index_dir(settings, user_id, table, model, dim)
    name, tmp = new_generation(target)
    try:
        for key, array in arrays.items():
            save_array(tmp / f"{key}.npy", array)
        save_table(tmp / COLUMNS_FILE, columns)
        if links is not None:
            save_table(tmp / LINKS_FILE, links)
        ann = n_vec >= ANN_MIN
        graph: dict[str, Any] = {}
        if ann:
            save_array(tmp / f"{HALF_VECTORS}.npy", arrays["vectors"].astype(np.float16))
            graph = write_graph(tmp, GraphParams(dim, ANN_DTYPE, ANN_CONNECTIVITY, ANN_EXPANSION_ADD),
                                index.matrix, index.rowids[index.vec_pos], arrays["ids"][index.vec_pos],
                                live_generation(target), save_array)
        files = {p.name: p.stat().st_size for p in tmp.iterdir()}
        save_manifest(tmp, {
            "format": FORMAT, "user_id": user_id, "table": table, "model": model, "dim": dim,
            "run_id": run_id, "watermark": watermark.isoformat() if watermark else None, "max_rowid": max_rowid,
            "covered": covered.isoformat(),
            "rows": index.n, "vectors": n_vec, "ann": ann, **graph,
            "written_at": clock.now().isoformat(), "files": files,
        })
        switch_to(target, tmp, name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("wrote %s index generation: %d rows, %d vectors", table, index.n, n_vec)
    return {"rows": index.n, "written": True, "vectors": n_vec, "ann": ann, "graph": graph.get("ann_graph"),
            "seconds": round(time.perf_counter() - t0, 3)}


def write_tenant(settings: Any, con: db.Connection, user_id: str, model: str, dim: int,
                 run_id: str | None = None, tables: Sequence[str] = ("episodes", "facts")) -> dict[str, Any]:
    """Write the indexes of a tenant's searchable tables (publish).

    A table gets an index from settings.search_index_min_rows rows on; one that has an index keeps it
    current whatever its size, so a published generation never goes stale behind a shrinking table (and
    one of an older format is rewritten in this one).
    """
    out: dict[str, Any] = {}
    signatures = unit_signatures(con, user_id)  # both tables' in one round trip (a tenant's night counts them)
    for table in tables:
        signature = signatures[table]
        published = (index_dir(settings, user_id, table, model, dim) / CURRENT).exists()
        # a tenant written through add_episodes (it has an inbox) is read without the store while the
        # night holds it: those readers need a generation of every table, whatever its size
        hot = signature[0] > 0 and inbox.tenant_dir(settings, user_id).exists()
        if signature[0] < settings.search_index_min_rows and not published and not hot:
            out[table] = {"rows": signature[0], "written": False}
            continue
        out[table] = write(con, settings, table, user_id, model, dim, run_id, signature)
    return out
