"""Retention and the verified parquet archive: list, mark, export, finalize (restore: restore.py; the nightly
entry point: nightly.py).

Lifecycle of a retired row (episodes in 'removal'; facts in 'removal', 'merged_into', 'deprecated',
'retracted' or 'superseded') once it is older than the retention window:
1. export: a manifest row (status 'writing') is committed, the rows are streamed to a new parquet
   file (never overwriting one), the file is read back (row count + content hash) and the manifest
   row becomes 'exported'. The live tables are untouched.
2. finalize: every file of the batch is verified again; then, in one transaction, rows that are in
   a file and unchanged since export are indexed in `archive_rows`, an 'archived' fact_event is
   written per fact, the rows leave the live tables, and the manifest row becomes 'finalized'.
A crash anywhere leaves every row live (steps not committed) or archived (finalize committed); the
next run abandons interrupted writes (their files are renamed out of the `*.parquet` glob) and
finalizes verified exports before exporting anything new, so nothing is lost or exported twice.
Database connections are held only while reading rows or writing; verification runs without one.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from engram import clock
from engram.archive.files import (
    BATCH_ROWS,
    check_run_id,
    partition_dir,
    read_columns,
    set_aside,
    verify,
    write_manifest_entry,
    write_once,
)
from engram.errors import EngramError, InvalidInput, StoreError
from engram.settings import Settings
from engram.store import db, inbox
from engram.store.crash import crash_point
from engram.store.fact_ops import FactChange, apply_changes
from engram.text.normalize import stable_id

log = logging.getLogger(__name__)

TABLES = ("episodes", "facts", "fact_sources")
EXPORT_ORDER = ("facts", "fact_sources", "episodes")
RETIRED: dict[str, tuple[str, ...]] = {
    "episodes": ("removal",),
    "facts": ("removal", "merged_into", "deprecated", "retracted", "superseded"),
}
STALE_WRITE = timedelta(hours=6)  # a 'writing' export this old is abandoned even if its writer looks alive
_TS = pa.timestamp("us")
# Columns read back from a file at finalize: the key plus what must be unchanged since export.
FINALIZE_SCHEMAS: dict[str, pa.Schema] = {
    "facts": pa.schema([
        ("export_id", pa.string()), ("user_id", pa.string()), ("id", pa.string()), ("status", pa.string()),
        ("last_updated", _TS), ("confidence", pa.float64()), ("confidence_at", _TS),
        ("merged_into_id", pa.string()), ("evidence_count", pa.int32()), ("content_hash", pa.string()),
    ]),
    "fact_sources": pa.schema([
        ("export_id", pa.string()), ("user_id", pa.string()), ("fact_id", pa.string()),
        ("episode_id", pa.string()), ("relation", pa.string()), ("similarity", pa.float64()),
        ("run_id", pa.string()), ("created_at", _TS),
    ]),
    "episodes": pa.schema([
        ("export_id", pa.string()), ("user_id", pa.string()), ("id", pa.string()), ("status", pa.string()),
        ("status_changed_at", _TS), ("content_hash", pa.string()),
    ]),
}
KEY_SEP = "\x1f"


class ArchiveIntegrityError(EngramError):
    """An archive file is missing, truncated or differs from its manifest: finalize/restore refused."""

    code = "archive_corrupt"


# ---------------------------------------------------------------------------------------------
# helpers


def _writer() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _writer_gone(note: str | None, created_at: datetime, now: datetime) -> bool:
    """Whether an export left in 'writing' was interrupted (its writer process is gone)."""
    if now - created_at > STALE_WRITE or not note or not note.startswith("writer="):
        return True
    host, _, pid_text = note.removeprefix("writer=").rpartition(":")
    if host != socket.gethostname():
        return False  # another machine's writer: only the age rule applies
    try:
        pid = int(pid_text)
    except ValueError:
        return True
    return pid == os.getpid() or not _pid_alive(pid)


def _selection(
    settings: Settings, table: str | None, status: str | Sequence[str] | None, older_than_days: int | None,
    as_of: datetime | None,
) -> tuple[dict[str, list[str]], datetime, datetime, int]:
    """Validated filters: retired statuses per table, the cutoff, as_of and the age in days."""
    if table is not None and table not in RETIRED:
        raise InvalidInput(f"table: {table!r} is not one of {sorted(RETIRED)} (fact_sources follow their facts)")
    tables = [table] if table else list(RETIRED)
    wanted = [status] if isinstance(status, str) else list(status or [])
    allowed = {s for t in tables for s in RETIRED[t]}
    bad = [s for s in wanted if s not in allowed]
    if bad:
        raise InvalidInput(f"status: {bad} cannot be archived from {tables}; choose from {sorted(allowed)}")
    days = settings.retention_days if older_than_days is None else older_than_days
    if not isinstance(days, int) or days < 0:
        raise InvalidInput(f"older_than_days: must be a whole number >= 0 (got {days!r})")
    as_of = clock.naive_utc_or_now(as_of)
    statuses = {t: [s for s in RETIRED[t] if not wanted or s in wanted] for t in tables}
    return {t: s for t, s in statuses.items() if s}, _cutoff(as_of, days), as_of, days


def _cutoff(as_of: datetime, days: int) -> datetime:
    """as_of minus days; a cutoff before year 1 is InvalidInput naming the option to change."""
    reach = (as_of - datetime.min).days  # the most days any cutoff can lie before this as_of
    if days <= reach:
        return as_of - timedelta(days=days)
    if days > (datetime.max - datetime.min).days:  # too many days for any as_of
        raise InvalidInput(f"older_than_days: --older-than-days {days} reaches before the year 1 from any "
                           f"--as-of; use at most {reach} with this --as-of")
    raise InvalidInput(f"as_of: --as-of {as_of.date().isoformat()} minus --older-than-days {days} is before the year 1; "
                       f"give an --as-of on or after {(datetime.min + timedelta(days=days)).date().isoformat()} or at most "
                       f"{reach} days")


_DUE_SCHEMA = {"user_id": pl.String, "table_name": pl.String, "id": pl.String, "status": pl.String,
               "changed_at": pl.Datetime("us")}


def due_rows(con: db.Connection, user_id: str | None, statuses: dict[str, list[str]], cutoff: datetime) -> pl.DataFrame:
    """Episodes and facts due for the archive (user_id, table_name, id, status, changed_at)."""
    frames = [
        db.query(con, f"queries/archive/archive_due_{table}", user_id=user_id, statuses=wanted, cutoff=cutoff)
        for table, wanted in statuses.items()
    ]
    frames = [f.cast(_DUE_SCHEMA) for f in frames if f.height]  # type: ignore[arg-type]
    return pl.concat(frames) if frames else pl.DataFrame(schema=_DUE_SCHEMA)


def _keys(frame: pl.DataFrame) -> pa.Table:
    return frame.select("user_id", "id").to_arrow()


def _sources_count(con: db.Connection, user_id: str, fact_keys: pl.DataFrame) -> int:
    if fact_keys.height == 0:
        return 0
    with db.registered(con, "archive_keys", _keys(fact_keys)):
        return int(db.rows(con, "queries/archive/archive_due_fact_sources_count", user_id=user_id)[0][0])


def exports_of(con: db.Connection, user_id: str | None = None, run_id: str | None = None,
             statuses: list[str] | None = None, export_ids: list[str] | None = None) -> list[dict[str, Any]]:
    frame = db.query(con, "queries/archive/archive_exports_list", user_id=user_id, run_id=run_id, statuses=statuses,
                     export_ids=export_ids)
    return frame.to_dicts()


# ---------------------------------------------------------------------------------------------
# list and mark


def list_exports(
    settings: Settings, user_id: str | None = None, run_id: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """The manifest: every export file, newest first, with counts, hashes, run id and status."""
    if status is not None and status not in ("writing", "exported", "finalized", "abandoned"):
        raise InvalidInput(f"status: {status!r} is not one of writing, exported, finalized, abandoned")
    with db.open_reader(settings) as con:  # read-only: a listing works on a read-only store directory
        return exports_of(con, user_id=user_id, run_id=run_id, statuses=[status] if status else None)


def list_removal_candidates(
    settings: Settings,
    user_id: str | None = None,
    table: str | None = None,
    status: str | Sequence[str] | None = None,
    older_than_days: int | None = None,
    as_of: datetime | None = None,
    sample: int = 5,
    read_only: bool = False,
) -> dict[str, Any]:
    """What the archive would take now: counts per table, tenant and status, and a sample of ids."""
    statuses, cutoff, as_of, days = _selection(settings, table, status, older_than_days, as_of)
    with db.open_store(settings, read_only=read_only) as con:
        due = due_rows(con, user_id, statuses, cutoff)
        sources = {
            u: _sources_count(con, u, due.filter((pl.col("user_id") == u) & (pl.col("table_name") == "facts")))
            for u in due["user_id"].unique().sort().to_list()
        }
        pending = exports_of(con, user_id=user_id, statuses=["writing", "exported"])
    groups = (
        due.group_by("table_name", "user_id", "status")
        .agg(pl.len().alias("n"), pl.col("changed_at").min().alias("oldest"))
        .sort("table_name", "user_id", "status")
        .rename({"table_name": "table"})
    )
    picked = due.group_by("table_name", maintain_order=True).head(max(sample, 0)).rename({"table_name": "table"})
    return {
        "as_of": as_of.isoformat(),
        "cutoff": cutoff.isoformat(),
        "older_than_days": days,
        "total": due.height,
        "counts": {t: int(due.filter(pl.col("table_name") == t).height) for t in statuses}
        | {"fact_sources": sum(sources.values())},
        "groups": groups.to_dicts(),
        "sample": picked.to_dicts(),
        "pending_exports": len(pending),
    }


def mark_removal(
    settings: Settings,
    user_id: str,
    ids: Sequence[str],
    table: str = "facts",
    reason: str = "marked for removal by hand",
    dry_run: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Set status 'removal' on the tenant's episodes or facts (audited for facts); unknown ids change nothing."""
    if table not in RETIRED:
        raise InvalidInput(f"table: {table!r} is not one of {sorted(RETIRED)}")
    if not user_id:
        raise InvalidInput("user_id: required")
    wanted = list(dict.fromkeys(i.strip() for i in ids if i and i.strip()))
    if not wanted:
        raise InvalidInput("ids: give at least one id")
    now = clock.naive_utc_or_now(now)
    run_id = clock.run_id("mark-removal", now)
    with db.open_store(settings) as con:
        live = dict(db.rows(con, f"queries/archive/archive_lookup_{table}", user_id=user_id, ids=wanted))
        archived = {r[0] for r in db.rows(con, "queries/archive/archive_lookup_archived", user_id=user_id,
                                         table_name=table, ids=wanted)} - set(live)
        unknown = [i for i in wanted if i not in live and i not in archived]
        if unknown:
            raise InvalidInput(f"ids: not found in {table} of tenant {user_id}: {unknown[:10]}")
        to_mark = [i for i in wanted if i in live and live[i] != "removal"]
        if to_mark and not dry_run:
            with db.transaction(con):
                if table == "facts":
                    changes = [FactChange(i, "retracted", reason, status="removal") for i in to_mark]
                    apply_changes(con, user_id, run_id, changes, now)
                else:
                    db.execute(con, "queries/archive/archive_mark_episodes_removal", user_id=user_id, ids=to_mark, now=now)
            if table == "episodes":
                inbox.withdraw(settings, user_id, to_mark)
    log.info("mark-removal %s: %d marked, %d already, %d archived", table, len(to_mark),
             len(live) - len(to_mark), len(archived))
    return {"table": table, "marked": len(to_mark), "already_marked": len(live) - len(to_mark),
            "archived": len(archived), "dry_run": dry_run, "run_id": None if dry_run else run_id}


# ---------------------------------------------------------------------------------------------
# export


def abandon_interrupted(settings: Settings, now: datetime | None = None) -> int:
    """Abandon exports left in 'writing' by a process that is gone; their files leave the glob."""
    now = clock.naive_utc_or_now(now)
    with db.open_store(settings) as con:
        stale = [x for x in exports_of(con, statuses=["writing"]) if _writer_gone(x["note"], x["created_at"], now)]
        stale = [x for x in stale if _set_aside_interrupted(settings, x)]
        for x in stale:
            new_path = x["path"]
            with db.transaction(con):
                db.execute(con, "queries/archive/archive_mark_abandoned", export_id=x["export_id"], path=new_path,
                           note="interrupted before verification")
    if stale:
        log.warning("abandoned %d interrupted archive export(s); their rows stay live", len(stale))
    return len(stale)


def _set_aside_interrupted(settings: Settings, x: dict[str, Any]) -> bool:
    """Rename an interrupted export's file out of the glob (x["path"] becomes the new path); False if it cannot be.

    One export that cannot be set aside is logged and left for the next run; it never blocks the others.
    """
    try:
        x["path"] = set_aside(Path(settings.archive_dir), x["path"])
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            log.warning("export %s: cannot set aside %s (%s); it stays 'writing'", x["export_id"], x["path"],
                        exc.strerror)
            return False
        # an older version failed before creating any file at a path no file system allows: nothing to move
    return True


def abandon_exports(settings: Settings, export_ids: Sequence[str], dry_run: bool = False) -> dict[str, Any]:
    """Give up unfinalized exports (the rows stay live; the files are renamed out of the archive glob)."""
    if not export_ids:
        raise InvalidInput("export_ids: give at least one export id")
    with db.open_store(settings) as con:
        found = exports_of(con, export_ids=list(export_ids))
        unknown = sorted(set(export_ids) - {x["export_id"] for x in found})
        if unknown:
            raise InvalidInput(f"export_ids: unknown {unknown[:10]}")
        final = [x["export_id"] for x in found if x["status"] not in ("writing", "exported")]
        if final:
            raise InvalidInput(f"export_ids: {final[:10]} are finalized or abandoned; only pending exports can be abandoned")
        if not dry_run:
            for x in found:
                new_path = set_aside(Path(settings.archive_dir), x["path"])
                with db.transaction(con):
                    db.execute(con, "queries/archive/archive_mark_abandoned", export_id=x["export_id"], path=new_path,
                               note="abandoned by hand")
    return {"abandoned": len(found), "dry_run": dry_run}


def _new_path(con: db.Connection, archive_dir: Path, run_id: str, user_id: str, table: str, day: date) -> tuple[str, str]:
    """A relative path and export id no export and no file has used."""
    used = {r[0] for r in db.rows(con, "queries/archive/archive_export_paths", run_id=run_id, user_id=user_id, table_name=table)}
    n = len(used) + 1
    while True:
        rel = f"{partition_dir(table, user_id, day)}/{run_id}-{n}.parquet"
        if rel not in used and not (archive_dir / rel).exists():
            return rel, stable_id("ax", run_id, user_id, table, str(n))
        n += 1


def _export_table(settings: Settings, run_id: str, user_id: str, table: str, keys: pa.Table, day: date) -> dict[str, Any]:
    """Write, read back and record one file holding the tenant's rows of `table` for these keys."""
    archive_dir = Path(settings.archive_dir)
    now = clock.now()
    with db.open_store(settings) as con:
        rel, export_id = _new_path(con, archive_dir, run_id, user_id, table, day)
        with db.transaction(con):
            db.execute(con, "queries/archive/archive_insert_export", export_id=export_id, batch_id=f"{run_id}/{user_id}",
                       run_id=run_id, user_id=user_id, table_name=table, partition_date=day, path=rel,
                       note=f"writer={_writer()}", now=now)
        crash_point("archive:after_intent")
        with db.registered(con, "archive_keys", keys):
            reader = con.sql(db.sql(f"queries/archive/archive_export_{table}"), params={"user_id": user_id}).to_arrow_reader(BATCH_ROWS)
            try:
                written = write_once(archive_dir / rel, reader.schema, reader)
            except OSError as exc:  # full disk, name too long, ...: fail now, rows stay live
                raise _write_failed(con, reader, archive_dir, export_id, rel, exc) from exc
    crash_point("archive:after_write")
    problems = verify(archive_dir / rel, written.rows, written.content_hash, written.file_sha256, written.file_bytes)
    verified_at = clock.now()
    with db.open_store(settings) as con:
        if problems:
            new_path = set_aside(archive_dir, rel)
            with db.transaction(con):
                db.execute(con, "queries/archive/archive_mark_abandoned", export_id=export_id, path=new_path,
                           note="read-back verification failed")
            raise ArchiveIntegrityError("export failed read-back verification: " + "; ".join(problems))
        with db.transaction(con):
            db.execute(con, "queries/archive/archive_mark_exported", export_id=export_id, row_count=written.rows,
                       content_hash=written.content_hash, file_sha256=written.file_sha256,
                       file_bytes=written.file_bytes, now=verified_at)
    entry = {"export_id": export_id, "batch_id": f"{run_id}/{user_id}", "run_id": run_id, "user_id": user_id,
             "table": table, "partition_date": day.isoformat(), "path": rel, "row_count": written.rows,
             "content_hash": written.content_hash, "file_sha256": written.file_sha256,
             "file_bytes": written.file_bytes, "verified_at": verified_at.isoformat(), "columns": reader.schema.names}
    write_manifest_entry(archive_dir, entry)
    return entry


def _write_failed(con: db.Connection, reader: pa.RecordBatchReader, archive_dir: Path, export_id: str, rel: str,
                  exc: OSError) -> StoreError:
    """Close the unread result (it would keep the connection busy and hide `exc`), abandon the export, name the cause."""
    reader.close()
    try:
        new_path = set_aside(archive_dir, rel)
    except OSError:
        new_path = rel  # nothing was linked to the final name, or it cannot even be looked at
    with db.transaction(con):
        db.execute(con, "queries/archive/archive_mark_abandoned", export_id=export_id, path=new_path,
                   note=f"write failed: {exc.strerror or exc}")
    return StoreError(f"archive_dir: writing {archive_dir / rel} failed ({exc.strerror or exc}); nothing was "
                      "archived, the rows stay live and the next run retries")


def _entry(x: dict[str, Any]) -> dict[str, Any]:
    """The json manifest entry of a manifest row."""
    keys = ("export_id", "batch_id", "run_id", "user_id", "partition_date", "path", "row_count", "content_hash",
            "file_sha256", "file_bytes", "verified_at")
    return {"table": x["table_name"]} | {k: x[k] for k in keys}


def check_writable(archive_dir: Path) -> None:
    """Fail early, with a typed error naming the setting, when the archive directory cannot be written."""
    try:
        Path(archive_dir).mkdir(parents=True, exist_ok=True)
        # a uniquely named probe: shards archive from several threads of one process at once
        with tempfile.NamedTemporaryFile(dir=archive_dir, prefix=".write-probe-"):
            pass
    except OSError as exc:
        raise StoreError(f"archive_dir: {archive_dir} is not writable ({exc.strerror}); nothing was exported") from exc


def export_removals(
    settings: Settings,
    user_id: str | None = None,
    table: str | None = None,
    status: str | Sequence[str] | None = None,
    older_than_days: int | None = None,
    as_of: datetime | None = None,
    run_id: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Write the rows due for the archive to new verified parquet files; the live tables are untouched.

    A tenant with exports still waiting for finalize is skipped (finalize or abandon those first), so
    running export twice never archives a row twice.
    """
    statuses, cutoff, as_of, days = _selection(settings, table, status, older_than_days, as_of)
    run_id = check_run_id(run_id or clock.run_id("export"))
    if not dry_run:
        check_writable(settings.archive_dir)
        abandon_interrupted(settings)
    with db.open_store(settings) as con:
        due = due_rows(con, user_id, statuses, cutoff)
        pending: dict[str, int] = defaultdict(int)
        for x in exports_of(con, user_id=user_id, statuses=["writing", "exported"]):
            pending[x["user_id"]] += 1
        plan: dict[str, dict[str, pa.Table]] = {}
        counts: dict[str, int] = defaultdict(int)
        skipped: dict[str, str] = {}
        for tenant in due["user_id"].unique().sort().to_list():
            if pending.get(tenant):
                skipped[tenant] = f"{pending[tenant]} export(s) wait for finalize-removal"
                continue
            mine = due.filter(pl.col("user_id") == tenant)
            facts = mine.filter(pl.col("table_name") == "facts")
            episodes = mine.filter(pl.col("table_name") == "episodes")
            n_sources = _sources_count(con, tenant, facts)
            plan[tenant] = {}
            for name, frame, n in (("facts", facts, facts.height), ("fact_sources", facts, n_sources),
                                   ("episodes", episodes, episodes.height)):
                if n:
                    plan[tenant][name] = _keys(frame)
                    counts[name] += n
    result: dict[str, Any] = {
        "run_id": run_id, "dry_run": dry_run, "as_of": as_of.isoformat(), "older_than_days": days,
        "rows": {t: counts.get(t, 0) for t in EXPORT_ORDER}, "files": [], "skipped_tenants": skipped,
    }
    if dry_run:
        return result
    result["rows"] = {t: 0 for t in EXPORT_ORDER}
    for tenant, tables in plan.items():
        for name in EXPORT_ORDER:
            if name in tables:
                entry = _export_table(settings, run_id, tenant, name, tables[name], as_of.date())
                result["files"].append({k: entry[k] for k in ("export_id", "path", "row_count", "table", "user_id")})
                result["rows"][name] += entry["row_count"]
    crash_point("archive:after_export")
    log.info("export %s: %s rows in %d file(s), %d tenant(s) skipped", run_id, result["rows"],
             len(result["files"]), len(skipped))
    return result


# ---------------------------------------------------------------------------------------------
# finalize


def _batch_keys(archive_dir: Path, exports: list[dict[str, Any]]) -> dict[str, pa.Table]:
    """The key and version columns of a batch's files, one table per live table."""
    parts: dict[str, list[pa.Table]] = defaultdict(list)
    for x in exports:
        schema = FINALIZE_SCHEMAS[x["table_name"]]
        cols = read_columns(archive_dir / x["path"], schema.names[1:])
        cols = cols.add_column(0, "export_id", pa.array([x["export_id"]] * cols.num_rows, pa.string()))
        parts[x["table_name"]].append(cols.cast(schema))
    return {
        t: pa.concat_tables(parts[t]) if parts[t] else schema.empty_table()
        for t, schema in FINALIZE_SCHEMAS.items()
    }


def finalize_removal(
    settings: Settings,
    user_id: str | None = None,
    run_id: str | None = None,
    export_ids: Sequence[str] | None = None,
    finalize_run_id: str | None = None,
    dry_run: bool = False,
    reason: str = "retention: moved to the verified archive",
) -> dict[str, Any]:
    """Remove from the live tables the rows of verified exports (filters: tenant, export run, ids).

    Each batch (run + tenant) is verified first: every file must exist and read back with the row
    count and content hash of the manifest. A batch that fails is refused with ArchiveIntegrityError
    (raised after the good batches are done) and its rows stay live.
    """
    finalize_run_id = check_run_id(finalize_run_id or clock.run_id("finalize"))
    archive_dir = Path(settings.archive_dir)
    if not dry_run:
        abandon_interrupted(settings)
    with db.open_store(settings) as con:
        matched = exports_of(con, user_id=user_id, run_id=run_id, statuses=["exported"],
                           export_ids=list(export_ids) if export_ids else None)
        wanted = {x["batch_id"] for x in matched}
        # a batch is finalized whole: a fact leaves only together with its fact_sources file
        pending = [x for x in exports_of(con, user_id=user_id, statuses=["exported"]) if x["batch_id"] in wanted]
    batches: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for x in sorted(pending, key=lambda x: x["export_id"]):
        batches[x["batch_id"]].append(x)
    rows: dict[str, int] = {t: 0 for t in EXPORT_ORDER}
    refused: list[str] = []
    done: list[str] = []
    for batch_id, exports in sorted(batches.items()):
        problems = [p for x in exports for p in verify(archive_dir / x["path"], x["row_count"], x["content_hash"],
                                                       x["file_sha256"], x["file_bytes"])]
        if problems:
            refused.append(f"batch {batch_id} ({', '.join(x['export_id'] for x in exports)}): " + "; ".join(problems))
            continue
        if dry_run:
            for x in exports:
                rows[x["table_name"]] += x["row_count"]
            continue
        tenant = exports[0]["user_id"]
        ids = [x["export_id"] for x in exports]
        for x in exports:  # a crash between verification and the json entry left it out: write it now
            write_manifest_entry(archive_dir, _entry(x))
        keys = _batch_keys(archive_dir, exports)
        now = clock.now()
        with db.open_store(settings) as con, \
                db.registered(con, "archive_file_facts", keys["facts"]), \
                db.registered(con, "archive_file_fact_sources", keys["fact_sources"]), \
                db.registered(con, "archive_file_episodes", keys["episodes"]):
            with db.transaction(con):
                db.execute(con, "queries/archive/archive_index_facts", user_id=tenant, now=now)
                db.execute(con, "queries/archive/archive_index_fact_sources", user_id=tenant, export_ids=ids, now=now)
                db.execute(con, "queries/archive/archive_index_episodes", user_id=tenant, now=now)
                db.execute(con, "queries/archive/archive_insert_archived_events", user_id=tenant, run_id=finalize_run_id,
                           export_ids=ids, reason=reason, now=now)
                for name in ("fact_sources", "facts", "episodes"):
                    db.execute(con, f"queries/archive/archive_delete_{name}", user_id=tenant, export_ids=ids)
                db.execute(con, "queries/archive/archive_mark_finalized", export_ids=ids, now=now)
                crash_point("archive:during_finalize")
            crash_point("archive:after_finalize")
            for x in exports_of(con, export_ids=ids):
                rows[x["table_name"]] += x["finalized_rows"] or 0
        done.append(batch_id)
    log.info("finalize %s: %d batch(es), rows %s, %d refused", finalize_run_id, len(done), rows, len(refused))
    result = {"run_id": finalize_run_id, "dry_run": dry_run, "batches": len(done) if not dry_run else len(batches) - len(refused),
              "rows": rows, "refused": refused}
    if refused:
        raise ArchiveIntegrityError(
            f"finalize refused for {len(refused)} batch(es); their rows stay live. "
            + " | ".join(refused)
            + " | Put the original file back, or run `engram finalize-removal --abandon EXPORT_ID` so the"
            " next export writes the rows again.",
        )
    return result
