"""`engram check`: run the invariant queries of sql/checks and exit non-zero on violations."""

from __future__ import annotations

from typing import Annotated

import typer

from engram.text.terminal import echo


def register(app: typer.Typer) -> None:
    """Add the `check` command."""

    @app.command()
    def check(
        show: Annotated[int, typer.Option(help="Print up to this many violating rows per check.")] = 5,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Run the invariant checks (sql/checks) and the inbox checks (segments quarantined or unreadable,
        records a fold refused, tenant folders without a user_id); exit 1 if any finds violations."""
        from engram.cli.app import emit, fail, settings_or_exit
        from engram.errors import EngramError
        from engram.store import db
        from engram.store.checks import INBOX_CHECKS, check_names, check_rows, inbox_findings
        from engram.store.sharding import all_shard_settings

        s = settings_or_exit()
        report: dict[str, dict] = {name: {"violations": 0, "rows": []} for name in check_names()}
        report |= {name: {"violations": 0, "rows": []} for name in INBOX_CHECKS}
        try:
            for shard in all_shard_settings(s, existing_only=True):  # every shard's rows, one report
                with db.open_store(shard, read_only=True) as con:
                    for name in check_names():
                        r = report[name]
                        bad = check_rows(con, name)
                        r["violations"] += bad.height
                        r["rows"] += bad.head(max(show - len(r["rows"]), 0)).to_dicts()
            for shard in all_shard_settings(s):  # an inbox may stand beside no store file yet
                for name, found in inbox_findings(shard).items():
                    r = report[name]
                    r["violations"] += len(found)
                    r["rows"] += found[: max(show - len(r["rows"]), 0)]
        except EngramError as exc:
            fail(exc)
        ok = all(r["violations"] == 0 for r in report.values())
        if as_json:
            emit({"ok": ok, "checks": report}, True)
        else:
            for name, r in report.items():
                echo(f"{'ok  ' if r['violations'] == 0 else 'FAIL'} {name}: {r['violations']}")
                for row in r["rows"]:
                    echo(f"       {row}")
        if not ok:
            raise typer.Exit(1)
