"""CLI commands of the archive: mark-removal, removal-candidates, export-removals, finalize-removal, restore."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from engram.store.tenant import normalise_user_option
from engram.text.terminal import echo

User = Annotated[str | None, typer.Option("--user", help="Only this tenant (user_id).", callback=normalise_user_option)]
Table = Annotated[str | None, typer.Option("--table", help="episodes | facts (fact_sources follow their facts).")]
Status = Annotated[str | None, typer.Option("--status", help="Only this retired status, e.g. deprecated.")]
OlderThan = Annotated[int | None, typer.Option("--older-than-days", help="Age of the status change in days "
                                               "(default: ENGRAM_RETENTION_DAYS).")]
AsOf = Annotated[datetime | None, typer.Option("--as-of", help="Reference time, UTC (default: now).")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would happen; write nothing.")]
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def _run(fn: Any, *args: Any, tenant: str | None = None, **kwargs: Any) -> Any:
    """fn(settings, ...) on the tenant's shard, or on every existing shard (results merged) without one."""
    from engram.cli.app import fail, settings_or_exit
    from engram.cli.progress import progress
    from engram.errors import EngramError
    from engram.store.sharding import stores_for

    settings = settings_or_exit()
    try:
        with progress(fn.__name__.replace("_", " ")):  # a pulsing bar in a terminal: sizes are not known up front
            results = [fn(shard, *args, **kwargs) for shard in stores_for(settings, tenant)]
    except EngramError as exc:
        fail(exc)
    return results[0] if len(results) == 1 else _merged(results)


def _merged(results: list[Any]) -> Any:
    """One result of several shards: lists joined, counts summed, dicts merged key by key, text kept from the first."""
    if all(isinstance(r, list) for r in results):
        return [x for r in results for x in r]
    out = dict(results[0])
    for r in results[1:]:
        for key, value in r.items():
            have = out.get(key)
            if key not in out:
                out[key] = value
            elif isinstance(value, bool):
                continue
            elif isinstance(value, (int, float, list)):
                out[key] = have + value
            elif isinstance(value, dict):
                out[key] = _merged([have, value])
    return out


def _rows_line(rows: dict[str, int]) -> str:
    return ", ".join(f"{n} {table}" for table, n in rows.items())


def mark_removal_cmd(
    ids: Annotated[list[str], typer.Argument(help="Ids of facts (or episodes with --table episodes).")],
    user: Annotated[str, typer.Option("--user", help="Tenant (user_id) of the ids.", callback=normalise_user_option)],
    table: Annotated[str, typer.Option("--table", help="facts | episodes")] = "facts",
    reason: Annotated[str, typer.Option("--reason", help="Recorded in the audit (facts).")] = "marked for removal by hand",
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Mark facts or episodes for removal: the archive takes them once retention has passed."""
    from engram.archive.ops import mark_removal
    from engram.cli.app import emit

    result = _run(mark_removal, user, ids, tenant=user, table=table, reason=reason, dry_run=dry_run)
    if as_json:
        emit(result, True)
        return
    verb = "would mark" if dry_run else "marked"
    echo(f"{verb} {result['marked']} {table} for removal; {result['already_marked']} already marked, "
               f"{result['archived']} already archived")


def removal_candidates_cmd(
    user: User = None, table: Table = None, status: Status = None, older_than_days: OlderThan = None,
    as_of: AsOf = None,
    sample: Annotated[int, typer.Option("--sample", help="Ids shown per table.")] = 5,
    as_json: Json = False,
) -> None:
    """List what the archive would take now: counts per table, tenant and status, and sample ids."""
    from engram.archive.ops import list_removal_candidates
    from engram.cli.app import emit

    result = _run(list_removal_candidates, tenant=user, user_id=user, table=table, status=status,
                  older_than_days=older_than_days, as_of=as_of, sample=sample, read_only=True)
    if as_json:
        emit(result, True)
        return
    echo(f"due: retired before {result['cutoff']} ({result['older_than_days']} days before {result['as_of']})")
    if not result["groups"]:
        echo("nothing is due")
    for g in result["groups"]:
        echo(f"{g['table']:10} {g['user_id']:24} {g['status']:12} {g['n']:>8}  oldest {g['oldest']}")
    if result["counts"].get("fact_sources"):
        echo(f"plus {result['counts']['fact_sources']} fact_sources row(s) that leave with their facts")
    for s in result["sample"]:
        echo(f"  e.g. {s['table']} {s['user_id']} {s['id']} ({s['status']} since {s['changed_at']})")
    if result["pending_exports"]:
        echo(f"{result['pending_exports']} export(s) wait for finalize-removal")


def export_removals_cmd(
    user: User = None, table: Table = None, status: Status = None, older_than_days: OlderThan = None,
    as_of: AsOf = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run id put in the file names.")] = None,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Write the rows due to new verified parquet files (live tables untouched until finalize-removal)."""
    from engram.archive.ops import export_removals
    from engram.cli.app import emit
    from engram.clock import run_id as new_run_id

    # one run id for every shard's files: the export is one run however many shards it spans
    result = _run(export_removals, tenant=user, user_id=user, table=table, status=status,
                  older_than_days=older_than_days, as_of=as_of, run_id=run_id or new_run_id("export"),
                  dry_run=dry_run)
    if as_json:
        emit(result, True)
        return
    verb = "would export" if dry_run else "exported"
    echo(f"{verb} {_rows_line(result['rows'])} in run {result['run_id']} ({len(result['files'])} file(s))")
    for f in result["files"]:
        echo(f"  {f['export_id']}  {f['path']}  {f['row_count']} rows")
    for tenant, why in result["skipped_tenants"].items():
        echo(f"skipped tenant {tenant}: {why}", err=True)


def finalize_removal_cmd(
    user: User = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Only exports of this run.")] = None,
    export_id: Annotated[list[str] | None, typer.Option("--export-id", help="Only these exports.")] = None,
    abandon: Annotated[bool, typer.Option("--abandon", help="Give up the --export-id exports instead: "
                                          "rows stay live, files are renamed out of the archive.")] = False,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Remove from the live tables the rows of verified exports (refused if a file fails verification)."""
    from engram.archive.ops import abandon_exports, finalize_removal
    from engram.cli.app import emit, fail
    from engram.errors import InvalidInput

    if abandon:
        if not export_id:
            fail(InvalidInput("export_id: --abandon needs at least one --export-id"))
        result = _run(abandon_exports, export_id, tenant=user, dry_run=dry_run)
        emit(result if as_json else f"abandoned {result['abandoned']} export(s); their rows stay live", as_json)
        return
    result = _run(finalize_removal, tenant=user, user_id=user, run_id=run_id, export_ids=export_id, dry_run=dry_run)
    if as_json:
        emit(result, True)
        return
    verb = "would remove" if dry_run else "removed"
    echo(f"{verb} {_rows_line(result['rows'])} from the live tables ({result['batches']} verified batch(es))")


def restore_cmd(
    user: Annotated[str, typer.Option("--user", help="Tenant (user_id).", callback=normalise_user_option)],
    ids: Annotated[list[str] | None, typer.Argument(help="Ids to restore (default: every archived row picked "
                                                    "by the other filters).")] = None,
    table: Annotated[str | None, typer.Option("--table", help="episodes | facts | fact_sources")] = None,
    from_run: Annotated[str | None, typer.Option("--from-run", help="Only rows archived by this run.")] = None,
    dry_run: DryRun = False,
    as_json: Json = False,
) -> None:
    """Bring archived rows back into the live tables (idempotent; facts come back with their sources)."""
    from engram.archive.restore import restore
    from engram.cli.app import emit

    result = _run(restore, user, tenant=user, table=table, ids=ids or None, export_run_id=from_run, dry_run=dry_run)
    if as_json:
        emit(result, True)
        return
    verb = "would restore" if dry_run else "restored"
    echo(f"{verb} {_rows_line(result['rows'])}")
    if any(result["already_live"].values()):
        echo(f"already live (kept as is): {_rows_line(result['already_live'])}")
    if result["not_archived"]:
        echo(f"not in the archive: {' '.join(result['not_archived'][:20])}", err=True)


def archive_exports_cmd(
    user: User = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Only exports of this run.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="writing | exported | finalized | abandoned")] = None,
    as_json: Json = False,
) -> None:
    """List the archive manifest: every export file with its counts, hashes, run and status."""
    from engram.archive.ops import list_exports
    from engram.cli.app import emit

    result = _run(list_exports, tenant=user, user_id=user, run_id=run_id, status=status)
    if as_json:
        emit(result, True)
        return
    if not result:
        echo("no exports")
    for x in result:
        echo(f"{x['export_id']}  {x['status']:9} {x['table_name']:12} {x['user_id']:16} "
                   f"rows={x['row_count']} finalized={x['finalized_rows']}  {x['path']}")


def register(app: typer.Typer) -> None:
    """Add the archive commands to the CLI."""
    app.command("mark-removal")(mark_removal_cmd)
    app.command("removal-candidates")(removal_candidates_cmd)
    app.command("list-removal-candidates", hidden=True)(removal_candidates_cmd)
    app.command("export-removals")(export_removals_cmd)
    app.command("finalize-removal")(finalize_removal_cmd)
    app.command("restore")(restore_cmd)
    app.command("archive-exports")(archive_exports_cmd)
