"""The `engram` command line: each command is a few lines over an engram function."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from engram.cli.guard import (
    GuardedGroup,
    debug_enabled,
    is_disk_full,
    needs_existing_store,
)
from engram.errors import EngramError, LLMError
from engram.settings import Settings, load_settings, log_file_for
from engram.store.tenant import normalise_user_option
from engram.text.terminal import echo

app = typer.Typer(
    help="engram: long-term memory for AI agents, consolidated nightly.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=GuardedGroup,
)


def settings_or_exit(**overrides: Any) -> Settings:
    """Settings for a command; invalid values end the command with the message naming them."""
    try:
        return load_settings(**{k: v for k, v in overrides.items() if v is not None})
    except EngramError as exc:
        fail(exc)
        raise  # unreachable: fail exits


def fail(exc: Exception) -> None:
    """Print a typed error (code and message; the traceback only with --debug) and exit 2 (1: the LLM failed or
    the disk is full, runtime failures as docs/foundation.md says)."""
    import traceback

    if debug_enabled():
        traceback.print_exception(exc)
    if is_disk_full(exc):  # a store or archive write that found no space: not bad input
        echo(f"error [disk_full]: {exc}", err=True)
        raise typer.Exit(1)
    code = getattr(exc, "code", "internal_error")
    echo(f"error [{code}]: {exc}", err=True)
    raise typer.Exit(1 if isinstance(exc, LLMError) else 2)


def emit(value: Any, as_json: bool) -> None:
    """Print a result as JSON or as plain lines."""
    if as_json:
        typer.echo(json.dumps(value, default=str, indent=2))  # exact: json escapes control characters
    elif isinstance(value, list):
        for item in value:
            echo(item)
    else:
        echo(value)


@app.callback()
def main(
    ctx: typer.Context,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show INFO logs (Prefect's run logs too) in the terminal; they always go to engram.log beside the store.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks (also ENGRAM_DEBUG=1).")] = False,
) -> None:
    """engram: long-term memory for AI agents, consolidated nightly."""
    from engram.cli.logs import configure, reset

    try:
        log_file = log_file_for(load_settings())
    except EngramError:
        log_file = None  # invalid settings: the command reports them itself
    configure(verbose, None if ctx.resilient_parsing else log_file, debug=debug or debug_enabled())
    ctx.call_on_close(reset)
    if debug:
        os.environ["ENGRAM_DEBUG"] = "1"  # read by fail() and the guard, also inside flows
    if needs_existing_store(ctx):  # only init, ingest and demo create a store
        from engram.store.presence import require_store

        try:
            require_store(settings_or_exit())
        except EngramError as exc:
            fail(exc)


@app.command()
def init(db: Annotated[Path | None, typer.Option(help="Store file.")] = None) -> None:
    """Create the store (or bring its schema up to date)."""
    from engram.store import db as store

    s = settings_or_exit(db_path=db)
    try:
        with store.connect(s.db_path, lock_timeout_s=s.lock_timeout_s) as con:
            applied = store.migrate(con)
    except EngramError as exc:
        fail(exc)
    echo(f"store ready: {s.db_path} ({len(applied)} schema file(s) applied)")


@app.command()
def config(as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False) -> None:
    """Print the effective settings (secrets masked)."""
    values = settings_or_exit().masked()
    if as_json:
        emit(values, True)
        return
    for name, value in values.items():
        echo(f"ENGRAM_{name.upper():32} {value}")


@app.command()
def ingest(
    file: Annotated[Path, typer.Argument(help="JSONL, CSV, parquet, or LoCoMo JSON file.")],
    format: Annotated[str | None, typer.Option("--format", help="jsonl | csv | parquet | locomo")] = None,
    user: Annotated[str | None, typer.Option(help="Tenant for rows without user_id.",
                                             callback=normalise_user_option)] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Ingest the good rows, report the bad.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Append episodes from a file (idempotent: re-ingesting adds nothing)."""
    from engram.cli.progress import counted, progress
    from engram.store.ingest import IngestRejected, add_episodes_routed, read_records
    from engram.store.locomo import locomo_records

    s = settings_or_exit()
    try:
        if format == "locomo":
            records = locomo_records(file, user_prefix="")
            numbers = None
        else:
            numbers, records = read_records(file, format)
        with progress(f"ingesting {file.name}", total=len(records)) as advance:
            result = add_episodes_routed(counted(records, advance), s, skip_invalid=skip_invalid, user_id=user,
                                         line_numbers=numbers, require_created_at=True)
    except IngestRejected as exc:
        for err in exc.errors[:50]:
            echo(f"{file}: {err}", err=True)
        more = f" ({len(exc.errors) - 50} more not shown)" if len(exc.errors) > 50 else ""
        fail(IngestRejected.summary(exc.errors, more))  # the rows are listed above: not twice
    except EngramError as exc:
        fail(exc)
    if result.received == 0:
        echo(f"{file}: no records in the file, nothing ingested", err=True)
    summary = {"received": result.received, "inserted": result.inserted, "queued": result.queued,
               "duplicates": result.duplicates, "invalid": [str(e) for e in result.invalid]}
    if as_json:
        emit(summary, True)
        return
    if result.queued:  # the nightly run (or the worker) holds the store
        echo(f"queued {result.queued} episode(s) in the inbox (the embedding worker folds them into the store shortly), "
             f"{result.duplicates} duplicate(s) skipped")
    else:
        echo(f"ingested {result.inserted} episode(s), {result.duplicates} duplicate(s) skipped")
    for err in result.invalid:
        echo(f"skipped {file}: {err}", err=True)


@app.command()
def embed(
    user: Annotated[str | None, typer.Option(help="Only this tenant.", callback=normalise_user_option)] = None,
    watch: Annotated[bool, typer.Option("--watch", help="Keep draining every tenant's queue until SIGTERM or "
                                        "Ctrl-C (finishes the batch under way, exits 0).")] = False,
    poll_s: Annotated[float | None, typer.Option("--poll-s", help="With --watch: seconds between passes "
                                                 "(default ENGRAM_EMBED_POLL_S).")] = None,
) -> None:
    """Embed every episode and fact waiting in the queue (--watch: keep doing it).

    Episodes waiting in the inbox are folded in first. An inbox segment that cannot be read is quarantined
    and the rest goes on; the command then exits 1 naming it (refused records are counted, exit 0)."""
    from engram import embed as embedders
    from engram.cli.progress import progress
    from engram.embed.queue import drain
    from engram.store.inbox_report import collect
    from engram.store.sharding import stores_for

    if watch:
        return _embed_watch(user, poll_s)
    if poll_s is not None:
        from engram.errors import InvalidInput

        fail(InvalidInput("--poll-s needs --watch"))
    s = settings_or_exit()
    collect()  # only this command's notices
    try:
        embedder = embedders.from_settings(s)
        with progress("embedding") as advance:
            n = sum(drain(shard, embedder, table, user, progress=advance)
                    for shard in stores_for(s, user) for table in ("episodes", "facts"))
    except EngramError as exc:
        for notice in collect().notices:  # what was set aside before the error
            echo(notice.line(), err=True)
        fail(exc)
    report = collect()
    refused = f"; {report.rejected} inbox record(s) refused" if report.rejected else ""
    quarantined = f"; {report.quarantined} inbox segment(s) quarantined" if report.quarantined else ""
    echo(f"embedded {n} row(s) with {embedder.provider}/{embedder.model} (dim {embedder.dim}){refused}{quarantined}")
    for line in report.lines():
        echo(line, err=True)
    if report.failed:
        raise typer.Exit(1)


def _embed_watch(user: str | None, poll_s: float | None) -> None:
    """`engram embed --watch`: the embedding worker in the foreground, one line per pass that embedded."""
    from engram import embed as embedders
    from engram.embed.worker import stop_on_signals, watch
    from engram.errors import InvalidInput

    if user:
        fail(InvalidInput("--watch drains every tenant's queue; drop --user"))
    s = settings_or_exit(embed_poll_s=poll_s)

    def report(counts: dict[str, int]) -> None:
        if counts["episodes"] or counts["facts"]:
            echo(f"embedded {counts['episodes']} episode(s), {counts['facts']} fact(s)")

    try:
        embedder = embedders.from_settings(s)
        echo(f"watching the embedding queue every {s.embed_poll_s} s with {embedder.provider}/{embedder.model}; "
             "SIGTERM or Ctrl-C stops", err=True)
        with stop_on_signals() as stop:
            totals = watch(s, embedder, stop=stop, on_pass=report)
    except EngramError as exc:
        fail(exc)
    echo(f"stopped after {totals['passes']} pass(es): embedded {totals['episodes']} episode(s), "
         f"{totals['facts']} fact(s)", err=True)


@app.command()
def stats(
    user: Annotated[str | None, typer.Option(help="Only this tenant.", callback=normalise_user_option)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="While another process holds the store, wait for its "
                                       "live counts instead of reading the last read snapshot.")] = False,
) -> None:
    """Row counts per table, tenant and status (from the last read snapshot while another process holds
    the store)."""
    from engram.store.stats import counts
    from engram.store.tenant_hint import unknown_tenant_hint
    from engram.text.terminal import table_lines

    def waiting(shard: Any) -> None:  # say why this waits instead of going quiet
        echo(f"{shard.db_path} is held by another process (the nightly run?); waiting up to "
             f"{shard.lock_timeout_s:g} s for its live counts", err=True)

    s = settings_or_exit()
    try:
        found = counts(s, user, wait=wait, on_wait=waiting)
        rows, contra = found.rows, found.contradictions
        # the hint reads the live store: while it is held, an empty answer says so without it
        hint = unknown_tenant_hint(s, user) if user and found.source == "store" else None
    except EngramError as exc:
        fail(exc)
    if found.source == "snapshot":
        private = "" if found.includes_private else ", private rows not included"
        echo(f"the store is held by another process (the nightly run?): counts from the read snapshot of "
             f"{found.snapshot_at:%Y-%m-%d %H:%M:%S} UTC{private}; {found.inbox_since} episode(s) written since "
             "wait in the inbox (--wait for the live counts)", err=True)
    if as_json:
        emit([dict(zip(("table", "user_id", "status", "n"), r, strict=True)) for r in rows], True)
        return
    if hint:
        echo(hint)
    if not rows:
        if not hint:
            echo("the store is empty")
        return
    for line in table_lines(["table", "tenant", "status / relation / action", "rows"], rows):
        echo(line)
    if contra:
        echo("")
        echo("contradictions, named as in the run report:")
        for line in table_lines(["tenant", "against", "contradictions", "penalised"], contra):
            echo(line)
        echo("  against: episodes that contradict a fact (fact_sources 'contradicts'); contradictions: fact")
        echo("  pairs in conflict, queued for review (llm_reviews); penalised: facts whose confidence was halved")
        echo("  (fact_events 'contradicted'). A run report counts the same, for that run only.")


def _register_optional_commands() -> None:
    """Commands defined in their own modules, added here so `engram --help` lists them all."""
    from engram.cli import commands as cli_commands

    cli_commands.register(app)


_register_optional_commands()


if __name__ == "__main__":  # pragma: no cover
    app()
