"""CLI of graph patches: `engram patch apply|rollback|list|show`, a few lines over engram.thoughtdb.patches."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from engram.store.tenant import normalise_user_option

User = Annotated[str, typer.Option("--user", help="Tenant (user_id).", callback=normalise_user_option)]
Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _run(fn: Any, user: str, read_only: bool = False) -> Any:
    """Run fn(con) against the tenant's store (its shard); typed errors end the command with their message."""
    from engram.cli.app import fail, settings_or_exit
    from engram.errors import EngramError
    from engram.store import db
    from engram.store.sharding import for_tenant

    s = settings_or_exit()
    try:
        with db.open_store(for_tenant(s, user), read_only=read_only) as con:
            return fn(con)
    except EngramError as exc:
        fail(exc)


def _change_lines(res: dict[str, Any]) -> list[str]:
    out = [f"patch {res['patch_id']}: {res['status']}"]
    for table, counts in sorted(res.get("changes", {}).items()):
        out.append(f"  {table}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return out


def register(app: typer.Typer) -> None:
    """Add the patch command group."""
    patch_app = typer.Typer(help="Graph patches: validated Thought-DB changes, applied atomically, undoable.",
                            no_args_is_help=True)
    app.add_typer(patch_app, name="patch")

    @patch_app.command("apply")
    def apply_cmd(
        file: Annotated[Path, typer.Argument(help="Patch JSON file ('-' for stdin).")],
        user: User,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and count changes; write nothing.")] = False,
        as_json: Json = False,
    ) -> None:
        """Validate a patch and apply it as one transaction (recorded for rollback)."""
        from engram.cli.app import emit, fail
        from engram.errors import InvalidInput
        from engram.thoughtdb import patches

        try:
            text = typer.get_text_stream("stdin").read() if str(file) == "-" else file.read_text()
        except OSError as exc:
            fail(InvalidInput(f"file: cannot read {file}: {exc.strerror}"))
        res = _run(lambda con: patches.apply_patch(con, user, text, dry_run=dry_run), user)
        emit(res if as_json else _change_lines(res), as_json)

    @patch_app.command("rollback")
    def rollback_cmd(patch_id: Annotated[str, typer.Argument(help="Patch id.")], user: User,
                     as_json: Json = False) -> None:
        """Restore every row the patch created or changed to its state before the patch."""
        from engram.cli.app import emit
        from engram.thoughtdb import patches

        res = _run(lambda con: patches.rollback_patch(con, user, patch_id), user)
        emit(res if as_json else _change_lines(res), as_json)

    @patch_app.command("list")
    def list_cmd(user: User, limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
                 as_json: Json = False) -> None:
        """The tenant's patches, newest first."""
        from engram.cli.app import emit
        from engram.thoughtdb import patches

        rows = _run(lambda con: patches.list_patches(con, user, limit), user, read_only=True)
        emit(rows if as_json else [f"{r['id']}  {r['status']}  {r['created_at']}  changes={r['n_changes']}"
                                   for r in rows], as_json)

    @patch_app.command("show")
    def show_cmd(patch_id: Annotated[str, typer.Argument(help="Patch id.")], user: User,
                 as_json: Json = False) -> None:
        """One patch with its ops."""
        import json

        from engram.cli.app import emit
        from engram.thoughtdb import patches

        row = _run(lambda con: patches.get_patch(con, user, patch_id), user, read_only=True)
        emit(row if as_json else [json.dumps(row, default=str, indent=2)], as_json)
