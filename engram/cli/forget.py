"""`engram forget`: erase a tenant completely (not reversible)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from engram.store.tenant import normalise_user_option
from engram.text.terminal import echo, table_lines

if TYPE_CHECKING:
    from engram.erase.forget import ForgetReport

HELP = (
    "Erase a tenant completely: its rows in every table, its inbox, search indexes, archive files and manifest "
    "entries, the read snapshots (rebuilt without it) and the log lines naming it; the store file (the tenant's "
    "shard) is rewritten so no deleted bytes remain. Not reversible, by design.\n\n"
    "Erasing needs --yes. Without it, a terminal asks you to type the user_id; anything else (a script, a pipe) "
    "is refused and nothing is erased. --dry-run reports what would go and erases nothing."
)


def register(app: typer.Typer) -> None:
    """Add the forget command."""
    from engram.cli.app import emit, fail, settings_or_exit
    from engram.errors import EngramError, InvalidInput

    @app.command(help=HELP)
    def forget(
        user: Annotated[str, typer.Option("--user", help="The tenant (user_id) to erase.",
                                          callback=normalise_user_option)],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would be erased; erase nothing.")] = False,
        yes: Annotated[bool, typer.Option("--yes", help="Erase without asking (needed when stdin is not a "
                                          "terminal).")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    ) -> None:
        from engram.erase.forget import forget_tenant

        s = settings_or_exit()
        if not (dry_run or yes):
            if not sys.stdin.isatty():
                fail(InvalidInput("yes: forget erases the tenant for good; pass --yes to confirm "
                                  "(or --dry-run to see what would go)"))
            typed = typer.prompt(f"This erases tenant {user} for good. Type its user_id to confirm", default="",
                                 show_default=False)
            if typed.strip() != user:
                fail(InvalidInput("yes: the user_id typed does not match; nothing was erased"))
        try:
            report = forget_tenant(s, user, dry_run=dry_run)
        except EngramError as exc:
            fail(exc)
        if as_json:
            emit(report.to_dict(), True)
        else:
            for line in report_lines(report):
                echo(line)
        if not report.complete:
            echo("forget: not complete: read snapshot(s) " + ", ".join(report.snapshots.held)
                 + " are held open by a reader; run the same command again once they are closed", err=True)
            raise typer.Exit(1)


def report_lines(r: ForgetReport) -> list[str]:
    """The report as lines: rows per table, then files and bytes per place."""
    verb = "would erase" if r.dry_run else "erased"
    lines = [f"{verb} tenant {r.user_id}: {r.total_rows} row(s) from {r.store}"]
    rows = [(table, n) for table, n in r.rows.items() if n]
    if rows:
        lines += ["  " + line for line in table_lines(["table", "rows"], rows)]
    places = [("inbox", r.inbox.files, r.inbox.bytes), ("search indexes", r.indexes.files, r.indexes.bytes),
              ("archive", r.archive.removed.files, r.archive.removed.bytes),
              ("read snapshots", r.snapshots.removed.files, r.snapshots.removed.bytes)]
    lines += ["  " + line for line in table_lines(["files of", "files", "bytes"], places)]
    if r.archive.manifest_entries:
        lines.append(f"  archive manifest entries: {r.archive.manifest_entries}")
    if r.archive.rewritten:
        lines.append(f"  shared archive files rewritten without its rows: {len(r.archive.rewritten)} "
                     f"({r.archive.rewritten_rows} row(s))")
    if r.snapshots.snapshots:
        lines.append(f"  read snapshots removed: {r.snapshots.snapshots}"
                     + (f"; published {r.snapshots.published} instead" if r.snapshots.published else ""))
    for path, n in r.log_lines.items():
        lines.append(f"  log lines naming it: {n} in {path}")
    if r.store_bytes_after is not None:
        lines.append(f"  store file rewritten: {r.store_bytes_before} -> {r.store_bytes_after} bytes")
    elif r.dry_run:
        lines.append(f"  the store file ({r.store_bytes_before} bytes) would be rewritten without the deleted bytes")
    return lines
