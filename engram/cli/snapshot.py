"""`engram snapshot` and `engram sql`: publish the read snapshot, and query it without touching the store."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from engram.text.terminal import echo, safe, table_lines


def _stdout() -> contextlib.AbstractContextManager[io.TextIOBase]:
    """sys.stdout for the csv writer, left open."""
    return contextlib.nullcontext(sys.stdout)


def _cell(value: Any) -> Any:
    """A CSV cell: a list, struct or map as JSON (the csv writer would write Python's repr of it)."""
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, default=_json_value, ensure_ascii=False)
    return value


def _exact(value: Any) -> Any:
    return _cell(value)


def _printable(value: Any) -> Any:
    """A CSV cell for the terminal: control characters in text escaped (\\x1b, \\r, \\u202e); newlines and tabs
    kept (the csv writer quotes them)."""
    value = _cell(value)
    return safe(value, keep_layout=True) if isinstance(value, str) else value


def _json_value(value: Any) -> Any:
    """JSON for what Arrow hands back: sums of integers arrive as Decimal (DuckDB's HUGEINT), dates as objects."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return str(value)


def _shell_lock_down(path: Path, settings: Any) -> list[str]:
    """duckdb CLI arguments that lock the shell on the snapshot as open_snapshot locks `engram sql`: the
    snapshot's directory only, the same memory and spill limits, then external access off and locked.

    The shell takes SQL text, not parameters: the directory and the limits are SQL string literals here
    (the one SQL text built in code; analyst_limits checked the limits strictly, and
    sql/snapshot/allowed_directories.sql, memory_limit.sql and max_temp_directory_size.sql are the
    parameterized forms). No timeout: a statement in the shell runs until it ends or Ctrl-C stops it.
    """
    from engram.store import db
    from engram.store.snapshot import analyst_limits, check_layout

    memory, temp = analyst_limits(settings)
    here = path.resolve()
    check_layout(here)
    listed = "'" + f"{here}{os.sep}".replace("'", "''") + "'"
    lock = [line.strip() for line in db.sql("snapshot/lock_down").splitlines()
            if line.strip() and not line.lstrip().startswith("--")]
    statements = " ".join([f"set memory_limit = '{memory}';", f"set max_temp_directory_size = '{temp}';", *lock])
    return ["-cmd", f"set allowed_directories = [{listed}]", "-cmd", statements]


def _path_hint(exc: Exception) -> str:
    """What to tell an analyst whose file pattern found nothing: relative paths are read from the snapshot's
    directory, where the archive is `archive/` (not the working directory's `data/archive/`)."""
    if "No files found" not in str(exc):
        return ""
    return (" (engram sql reads relative paths from the snapshot's directory: the archive is"
            " 'archive/table=<table>/**/*.parquet', or use the archived_facts and archived_episodes views)")


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


def register(app: typer.Typer) -> None:
    """Add the snapshot commands."""
    from engram.cli.app import emit, fail, settings_or_exit
    from engram.errors import EngramError, InvalidInput

    @app.command()
    def snapshot(as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False) -> None:
        """Publish the read snapshot now (the nightly run does it after every run)."""
        from engram.store import db
        from engram.store.sharding import all_shard_settings
        from engram.store.snapshot import publish_snapshot

        s = settings_or_exit()
        try:
            for shard in all_shard_settings(s, existing_only=True):
                with db.open_store(shard):  # an older store gets the current schema first
                    pass
            done = publish_snapshot(s)
        except EngramError as exc:
            fail(exc)
        if as_json:
            emit(done.to_dict(), True)
            return
        counts = ", ".join(f"{name} {n}" for name, n in done.rows.items())
        echo(f"snapshot {done.snapshot_id} published in {done.seconds} s: {counts}")
        echo(f"query it: engram sql \"select * from current_facts limit 10\"  (files: {done.path})")

    @app.command()
    def sql(
        query: Annotated[str | None, typer.Argument(help="SQL over the snapshot's views (none: open a shell).")] = None,
        fmt: Annotated[Format, typer.Option("--format", help="table | csv | json | parquet")] = Format.table,
        out: Annotated[Path | None, typer.Option("--out", help="Write the result to this file.")] = None,
        width: Annotated[int, typer.Option("--width", min=8, help="Cut table cells to this many characters.")] = 60,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON (--format json).")] = False,
    ) -> None:
        """Query the latest read snapshot (never the live store: no lock on either side), within
        ENGRAM_SQL_TIMEOUT_S (a QUERY only, not the shell) and ENGRAM_SQL_MEMORY_LIMIT."""
        from engram.store import db
        from engram.store.snapshot import VIEWS_FILE, hold_snapshot, open_snapshot

        s = settings_or_exit()
        if as_json:
            if fmt not in (Format.table, Format.json):
                fail(InvalidInput(f"--json: asks for JSON, --format asks for {fmt.value}; give one of them"))
            fmt = Format.json
        try:
            if query is None:
                with hold_snapshot(s) as path:
                    shell = shutil.which("duckdb")
                    if shell is None:
                        echo(str(path.resolve() / VIEWS_FILE))
                        echo(f"no duckdb CLI on PATH: open the file above read-only from its directory "
                             f"(cd {path.resolve()} && duckdb -readonly {VIEWS_FILE}), or pass a query", err=True)
                        return
                    raise typer.Exit(subprocess.call([shell, "-readonly", *_shell_lock_down(path, s), VIEWS_FILE],
                                                     cwd=path))
            if fmt is Format.parquet and out is None:
                raise InvalidInput("--out: --format parquet needs a file to write")
            with open_snapshot(s) as con:
                try:
                    result = db.run_analyst_query(con, query, timeout_s=s.sql_timeout_s)
                except Exception as exc:
                    if not db.is_driver_error(exc):
                        raise
                    raise InvalidInput(f"query: {str(exc).strip().splitlines()[0]}{_path_hint(exc)}") from None
        except EngramError as exc:
            fail(exc)
        if result is None:
            echo("ok")
            return
        _write(result, fmt, out, width)

    def _write(result: Any, fmt: Format, out: Path | None, width: int) -> None:
        import pyarrow.parquet as pq

        if fmt is Format.parquet:
            pq.write_table(result, out)
        elif fmt is Format.csv:  # the csv module quotes only values that need it (Arrow quotes every string)
            # printed, text is escaped as all human output is (csv has no escape of its own); --out is exact,
            # with RFC 4180's \r\n line ends: the csv module quotes a cell holding \r only when \r ends lines
            shown = _exact if out else _printable
            with (open(out, "w", newline="", encoding="utf-8") if out else _stdout()) as fh:
                writer = csv.writer(fh, lineterminator="\r\n" if out else "\n")
                writer.writerow([shown(c) for c in result.column_names])
                writer.writerows(tuple(shown(v) for v in r.values()) for r in result.to_pylist())
        elif fmt is Format.json:
            text = json.dumps(result.to_pylist(), default=_json_value, indent=2)
            if out:
                out.write_text(text + "\n")
            else:
                typer.echo(text)
        else:
            rows = [tuple(r.values()) for r in result.to_pylist()]
            lines = [*table_lines(result.column_names, rows, width), f"({len(rows)} row{'s' if len(rows) != 1 else ''})"]
            if out:
                out.write_text("\n".join(lines) + "\n")
            else:
                for line in lines:
                    echo(line)
        if out:
            echo(f"wrote {result.num_rows} row(s) to {out}", err=True)
