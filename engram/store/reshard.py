"""Resharding: move every tenant from the current shard layout to one with another shard count.

For each (source shard, target shard) pair, in batches of tenants: copy the tenants' rows of every
tenant-scoped table into the target (replacing any copy a crashed run left there), verify row
counts and a content hash per table per tenant in source vs target, and only then delete the rows
from the source. A crash at any point leaves every tenant complete in its source, or verified in
its target, so re-running the same command finishes the move without duplicates. A manifest file
beside the store records progress; nothing else may write to the store while a reshard runs.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput, StoreError
from engram.settings import Settings
from engram.store import db
from engram.store.sharding import MAX_SHARDS, shard_of, shard_path, shard_settings

log = logging.getLogger(__name__)

BATCH_TENANTS = 500
SOURCE = "shard_src"


def manifest_path(settings: Settings) -> Path:
    """The reshard progress file, beside the store: <stem>.reshard.json."""
    base = Path(settings.db_path)
    return base.with_name(f"{base.stem}.reshard.json")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _with_table(name: str, table: str, known: list[str]) -> str:
    """Named SQL with its {table} identifier filled in; only catalog table names are accepted."""
    if table not in known:  # names come from duckdb_tables(), never from input
        raise StoreError(f"table: {table!r} is not a tenant table of the store")
    return db.sql(name).replace("{table}", _ident(table))


def tenant_tables(con: db.Connection) -> list[str]:
    """Every table of the open store with a user_id column."""
    return [r[0] for r in db.rows(con, "queries/store/shard_tenant_tables")]


def _tenants(con: db.Connection, tables: list[str], prefix: str = "") -> set[str]:
    return {u for t in tables for (u,) in db.rows(con, "queries/store/shard_table_tenants", table=prefix + t)}


def _digests(con: db.Connection, tables: list[str], users: list[str], prefix: str = "") -> dict[tuple[str, str], tuple[int, str]]:
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for t in tables:
        for u, n, digest in db.rows(con, "queries/store/shard_tenant_digest", table=prefix + t, user_ids=users):
            out[(t, u)] = (int(n), digest)
    return out


def _source_settings(settings: Settings, k: int, n: int) -> Settings:
    return shard_settings(settings.model_copy(update={"shards": n}), k, n)


def _load_manifest(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise StoreError(f"reshard manifest {path} is unreadable: {exc}") from exc


def _save_manifest(path: Path, manifest: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, default=str))
    tmp.replace(path)  # atomic: a crash never leaves half a manifest


def plan(settings: Settings, to: int) -> dict[tuple[int, int], list[str]]:
    """The tenants to move, per (source shard, target shard), read from the existing source files."""
    n = settings.shards
    found: dict[str, int] = {}
    moves: dict[tuple[int, int], list[str]] = defaultdict(list)
    for k in range(n):
        src = _source_settings(settings, k, n)
        if not Path(src.db_path).exists():
            continue
        with db.open_store(src) as con:
            users = _tenants(con, tenant_tables(con))
        for u in sorted(users):
            if u in found:
                raise StoreError(f"tenant {u} has rows in shards {found[u]} and {k}; fix before resharding")
            found[u] = k
            if shard_path(settings, k, n) != shard_path(settings, shard_of(u, to), to):
                moves[(k, shard_of(u, to))].append(u)
    return dict(sorted(moves.items()))


def reshard(settings: Settings, to: int, dry_run: bool = False, batch: int = BATCH_TENANTS) -> dict[str, Any]:
    """Move every tenant from settings.shards shard files to `to`, verified, resumable after a crash."""
    if not isinstance(to, int) or not 1 <= to <= MAX_SHARDS:
        raise InvalidInput(f"to: must be an integer in 1..{MAX_SHARDS}, got {to!r}")
    n = settings.shards
    mpath = manifest_path(settings)
    manifest = _load_manifest(mpath)
    if manifest and manifest.get("status") == "running" and (manifest["from"], manifest["to"]) != (n, to):
        raise InvalidInput(
            f"to: a reshard from {manifest['from']} to {manifest['to']} shards is unfinished; "
            f"re-run it (ENGRAM_SHARDS={manifest['from']}, --to {manifest['to']}) first"
        )
    moves = plan(settings, to)
    report: dict[str, Any] = {
        "from": n, "to": to, "dry_run": dry_run, "manifest": str(mpath),
        "tenants": sum(len(v) for v in moves.values()),
        "moves": [{"source": str(shard_path(settings, a, n)), "target": str(shard_path(settings, b, to)),
                   "tenants": len(users)} for (a, b), users in moves.items()],
        "rows": {}, "removed_files": [],
    }
    if dry_run or n == to:
        return report
    if not manifest or manifest.get("status") != "running":
        manifest = {"from": n, "to": to, "status": "running", "started_at": datetime.now(UTC).isoformat(),
                    "tenants_done": 0, "rows_moved": {}}
        _save_manifest(mpath, manifest)
    rows: dict[str, int] = defaultdict(int)
    for (a, b), users in moves.items():
        src, dst = _source_settings(settings, a, n), shard_settings(settings, b, to)
        for i in range(0, len(users), batch):
            chunk = users[i:i + batch]
            moved = move_tenants(src, dst, chunk)
            for t, c in moved.items():
                rows[t] += c
                manifest["rows_moved"][t] = manifest["rows_moved"].get(t, 0) + c
            manifest["tenants_done"] += len(chunk)
            _save_manifest(mpath, manifest)
            log.info("reshard: %d tenant(s) moved from shard %d/%d to %d/%d", len(chunk), a, n, b, to)
    report["rows"] = dict(sorted(rows.items()))
    report["removed_files"] = _remove_empty_sources(settings, n, to)
    manifest.update(status="done", finished_at=datetime.now(UTC).isoformat())
    _save_manifest(mpath, manifest)
    return report


def move_tenants(src: Settings, dst: Settings, users: list[str]) -> dict[str, int]:
    """Copy, verify, then delete one batch of tenants from src to dst; rows moved per table."""
    with db.open_store(src) as con:  # migrates the source to the current schema before comparing
        tables = tenant_tables(con)
    with db.open_store(dst) as con:
        missing = sorted(set(tables) - set(tenant_tables(con)))
        if missing:
            raise StoreError(f"target shard {dst.db_path} lacks tables {missing}")
        db.execute(con, "queries/store/shard_attach_source", path=str(src.db_path))
        try:
            with db.transaction(con):
                for t in tables:  # replace what a crashed run may have copied already: no duplicates
                    con.execute(_with_table("queries/store/shard_delete_tenants", t, tables), {"user_ids": users})
                    con.execute(_with_table("queries/store/shard_copy_tenants", t, tables),
                                {"source": f"{SOURCE}.{t}", "user_ids": users})
            before = _digests(con, tables, users, prefix=f"{SOURCE}.")
            after = _digests(con, tables, users)
        finally:
            db.execute(con, "queries/store/shard_detach_source")
    if before != after:
        bad = sorted({k for k in set(before) | set(after) if before.get(k) != after.get(k)})
        raise StoreError(f"reshard verification failed for {len(bad)} (table, tenant) pair(s), e.g. {bad[0]}; "
                         f"the source rows were kept")
    with db.open_store(src) as con, db.transaction(con):
        for t in tables:
            con.execute(_with_table("queries/store/shard_delete_tenants", t, tables), {"user_ids": users})
    moved: dict[str, int] = defaultdict(int)
    for (t, _u), (count, _digest) in before.items():
        moved[t] += count
    return dict(moved)


def _remove_empty_sources(settings: Settings, n: int, to: int) -> list[str]:
    """Delete old shard files that are not part of the new layout and hold no tenant rows."""
    keep = {shard_path(settings, k, to) for k in range(to)}
    removed = []
    for k in range(n):
        path = shard_path(settings, k, n)
        if path in keep or not path.exists():
            continue
        with db.open_store(_source_settings(settings, k, n)) as con:
            left = sum(db.rows(con, "queries/store/shard_table_rows", table=t)[0][0] for t in tenant_tables(con))
        if left:
            log.warning("reshard: old shard %d/%d still holds %d row(s); kept", k, n, left)
            continue
        for p in (path, path.with_name(path.name + ".wal")):
            p.unlink(missing_ok=True)
        db.forget(path)
        removed.append(str(path))
    return removed


def layout(settings: Settings) -> list[dict[str, Any]]:
    """Every shard file of the configured layout: path, whether it exists, tenant count, episodes."""
    out = []
    for k in range(settings.shards):
        s = shard_settings(settings, k)
        entry: dict[str, Any] = {"shard": k, "path": str(s.db_path), "exists": Path(s.db_path).exists(),
                                 "tenants": 0, "episodes": 0}
        if entry["exists"]:
            with db.open_store(s, read_only=True) as con:
                entry["tenants"] = len(_tenants(con, tenant_tables(con)))
                entry["episodes"] = db.rows(con, "queries/store/shard_table_rows", table="episodes")[0][0]
        out.append(entry)
    return out
