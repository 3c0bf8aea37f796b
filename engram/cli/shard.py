"""CLI commands for the sharded store: shards (the layout), shard-of (a tenant's shard), reshard."""

from __future__ import annotations

from typing import Annotated

import typer

from engram.store.tenant import normalise_user_option
from engram.text.terminal import echo

Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def register(app: typer.Typer) -> None:
    """Add the sharding commands."""
    from engram.cli.app import emit, fail, settings_or_exit
    from engram.errors import EngramError

    @app.command("shards")
    def shards_cmd(as_json: Json = False) -> None:
        """List the shard files of the configured layout (ENGRAM_SHARDS) with tenant and episode counts."""
        from engram.store.reshard import layout

        s = settings_or_exit()
        try:
            rows = layout(s)
        except EngramError as exc:
            fail(exc)
        if as_json:
            emit(rows, True)
            return
        for r in rows:
            state = f"{r['tenants']:>8} tenant(s) {r['episodes']:>10} episode(s)" if r["exists"] else "(not created)"
            echo(f"{r['shard']:>5}  {r['path']}  {state}")

    @app.command("shard-of")
    def shard_of_cmd(
        user: Annotated[str, typer.Option("--user", help="Tenant (user_id).", callback=normalise_user_option)],
        as_json: Json = False,
    ) -> None:
        """Print the shard number and file that hold a tenant."""
        from engram.store.sharding import for_tenant, shard_of

        s = settings_or_exit()
        try:
            out = {"user_id": user, "shard": shard_of(user, s.shards), "shards": s.shards,
                   "path": str(for_tenant(s, user).db_path)}
        except EngramError as exc:
            fail(exc)
        emit(out if as_json else f"{out['shard']} {out['path']}", as_json)

    @app.command("reshard")
    def reshard_cmd(
        to: Annotated[int, typer.Option("--to", help="The new number of shards (1..4096).")],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the moves; write nothing.")] = False,
        as_json: Json = False,
    ) -> None:
        """Move tenants from ENGRAM_SHARDS shard files to --to files: copy, verify, then delete (resumable)."""
        from engram.cli.progress import progress
        from engram.store.reshard import reshard

        s = settings_or_exit()
        try:
            with progress("resharding"):  # a pulsing bar in a terminal; one summary line when piped
                report = reshard(s, to, dry_run=dry_run)
        except EngramError as exc:
            fail(exc)
        if as_json:
            emit(report, True)
            return
        verb = "would move" if dry_run else "moved"
        echo(f"{verb} {report['tenants']} tenant(s) from {report['from']} to {report['to']} shard(s)")
        for m in report["moves"]:
            echo(f"  {m['tenants']:>8}  {m['source']} -> {m['target']}")
        for table, n in report["rows"].items():
            echo(f"  {table:24} {n} row(s)")
        for path in report["removed_files"]:
            echo(f"  removed empty old shard {path}")
        if not dry_run and report["from"] != report["to"]:
            echo(f"now set ENGRAM_SHARDS={report['to']}")
