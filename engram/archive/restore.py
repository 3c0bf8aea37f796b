"""Restore: archived rows of a tenant back into the live tables, from verified parquet files."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from engram import clock
from engram.archive.files import check_run_id, read_matching, verify
from engram.archive.ops import KEY_SEP, TABLES, ArchiveIntegrityError, exports_of
from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store import db
from engram.store.crash import crash_point

log = logging.getLogger(__name__)

RESTORE_SQL = {t: f"queries/archive/archive_restore_{t}" for t in TABLES}


def _row_ids(table: str, frame: pa.Table) -> pa.Array:
    if table == "fact_sources":
        return pc.binary_join_element_wise(frame["fact_id"], frame["episode_id"], frame["relation"], KEY_SEP)
    return frame["id"]


def restore(
    settings: Settings,
    user_id: str,
    table: str | None = None,
    ids: Sequence[str] | None = None,
    export_run_id: str | None = None,
    run_id: str | None = None,
    dry_run: bool = False,
    reason: str = "restored from the archive",
) -> dict[str, Any]:
    """Bring archived rows of a tenant back into the live tables (and the sources of restored facts).

    Idempotent: rows already live are kept and counted as already_live; a second call restores nothing.
    """
    if not user_id:
        raise InvalidInput("user_id: required")
    if table is not None and table not in TABLES:
        raise InvalidInput(f"table: {table!r} is not one of {list(TABLES)}")
    wanted = list(dict.fromkeys(ids)) if ids else None
    run_id = check_run_id(run_id or clock.run_id("restore"))
    archive_dir = Path(settings.archive_dir)
    with db.open_store(settings) as con:
        picked = db.query(con, "queries/archive/archive_restorable", user_id=user_id, table_name=table, ids=wanted,
                          run_id=export_run_id)
        exports = {x["export_id"]: x for x in exports_of(con, user_id=user_id,
                                                       export_ids=picked["export_id"].unique().to_list() or None)}
    not_archived = sorted(set(wanted or []) - set(picked["row_id"].to_list()))
    counts = {t: int(picked.filter(pl.col("table_name") == t).height) for t in TABLES}
    result: dict[str, Any] = {"run_id": run_id, "dry_run": dry_run, "rows": counts,
                              "already_live": {t: 0 for t in TABLES},
                              "not_archived": not_archived}
    if dry_run or picked.height == 0:
        return result
    incoming: dict[str, list[pa.Table]] = defaultdict(list)
    for export_id, group in picked.group_by("export_id", maintain_order=True):
        x = exports[export_id[0]]
        path = archive_dir / x["path"]
        # the manifest's sha256 was taken from bytes whose rows were verified: same bytes, same rows
        problems = verify(path, None, None, x["file_sha256"], x["file_bytes"], decode=False)
        if problems:
            raise ArchiveIntegrityError("restore refused, nothing restored: " + "; ".join(problems))
        row_ids = group["row_id"].to_list()
        if x["table_name"] == "fact_sources":
            part = read_matching(path, "fact_id", sorted({r.split(KEY_SEP, 1)[0] for r in row_ids}))
        else:
            part = read_matching(path, "id", row_ids)
        part = part.filter(pc.is_in(_row_ids(x["table_name"], part), value_set=pa.array(row_ids, pa.string())))
        if part.num_rows != len(row_ids):
            raise ArchiveIntegrityError(f"restore refused, nothing restored: {path} holds {part.num_rows} of the "
                                        f"{len(row_ids)} rows the index says it archived")
        incoming[x["table_name"]].append(part)
    keys = picked.select("table_name", "row_id", "export_id").to_arrow()
    inserted: dict[str, int] = {}
    now = clock.now()
    with db.open_store(settings) as con, db.transaction(con):
        for name in ("episodes", "facts", "fact_sources"):
            if incoming.get(name):
                with db.registered(con, "archive_restore_rows", pa.concat_tables(incoming[name])):
                    inserted[name] = int(db.rows(con, RESTORE_SQL[name])[0][0])
        with db.registered(con, "archive_restore_keys", keys):
            db.execute(con, "queries/archive/archive_insert_restored_events", user_id=user_id, run_id=run_id,
                       reason=reason, now=now)
            db.execute(con, "queries/archive/archive_mark_restored", user_id=user_id, run_id=run_id, now=now)
        crash_point("archive:during_restore")
    result["rows"] = {t: inserted.get(t, 0) for t in TABLES}
    result["already_live"] = {t: counts[t] - inserted.get(t, 0) for t in TABLES}
    log.info("restore %s: %s restored", run_id, result["rows"])
    return result
