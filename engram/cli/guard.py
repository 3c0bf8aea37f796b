"""The CLI's last line of defence: an unexpected exception becomes one clear line, not a traceback."""

from __future__ import annotations

import errno
import os
import sys
import traceback
from functools import partial
from typing import Any

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from engram.text.terminal import echo

# Commands that may create the store; every other command needing a store refuses a missing one.
STORE_CREATORS = {"init", "ingest", "demo"}
# Commands that open no store of the configured path, or handle a missing one themselves
# (mcp serves add_memory, which creates the store like ingest; eval builds its own stores; sql reads
# only the read snapshot).
NO_STORE_NEEDED = {"config", "mcp", "eval", "shard-of", "shards", "reshard", "sql"}


def debug_enabled() -> bool:
    """--debug or ENGRAM_DEBUG=1: show tracebacks."""
    return os.environ.get("ENGRAM_DEBUG", "").strip().lower() in {"1", "true", "yes"}


def is_disk_full(exc: BaseException) -> bool:
    """Whether exc, or an error it was raised from, says the disk (or the quota) is full."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in {errno.ENOSPC, errno.EDQUOT}:
            return True
        text = str(current).lower()
        if "no space left" in text or "disk full" in text or "disk quota exceeded" in text:
            return True
        current = current.__cause__ or current.__context__
    return False


def classify(exc: BaseException) -> tuple[str, int, str]:
    """(code, exit status, one-line cause) of an exception no command handled: 2 bad input, 1 runtime."""
    from engram.store import db

    if isinstance(exc, RecursionError):
        return "invalid_params", 2, "input: nested too deeply to read"
    if isinstance(exc, UnicodeError):
        return "invalid_params", 2, f"input: not valid Unicode text ({exc.reason})"
    if isinstance(exc, OSError) and exc.errno in {errno.ENOSPC, errno.EDQUOT}:
        return "disk_full", 1, f"no space left on the device ({exc.filename or 'store'})"
    if db.is_driver_error(exc):
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "space left" in text.lower() or "disk full" in text.lower():
            return "disk_full", 1, f"no space left on the device: {text}"
        return "db_error", 1, f"the store failed: {text}"
    if isinstance(exc, OSError):
        return "io_error", 1, f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"
    return "internal_error", 1, f"{type(exc).__name__}: {exc}"


class GuardedGroup(TyperGroup):
    """The `engram` group: unexpected exceptions end the command with one line (traceback with --debug)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # every command's parameters exist by now (typer adds the completion options after __init__)
        plain_help(self, ctx)
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            one_line_usage_error(exc)
            raise  # unreachable

    def invoke(self, ctx: Any) -> Any:
        # the group callback runs after typer has taken the subcommand's arguments out of ctx
        ctx.meta["engram.args"] = [*getattr(ctx, "_protected_args", []), *ctx.args]
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            one_line_usage_error(exc)
        except Exception as exc:  # the one place that turns a bug or an OS failure into a message
            if _is_control_flow(exc):
                raise
            if isinstance(exc, BrokenPipeError):  # `engram ... | head`: the reader has what it wanted
                _silence_stdout()
                raise typer.Exit(1) from None
            if debug_enabled():
                traceback.print_exception(exc)
            code, status, cause = classify(exc)
            hint = "" if debug_enabled() else " (run with --debug for the traceback)"
            echo(f"error [{code}]: {cause}{hint}", err=True)
            raise typer.Exit(status) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not hit the closed pipe again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's buffer)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def one_line_usage_error(exc: UsageError) -> None:
    """A usage error as one line, `error [usage]: cause (see COMMAND --help)`, and exit 2 (typer boxes it in
    a panel under the usage line). A bare group's help (no arguments) is no error: it is raised on."""
    if isinstance(exc, NoArgsIsHelpError):
        raise exc
    where = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
    echo(f"error [usage]: {exc.format_message().rstrip('.')}{where}", err=True)
    raise typer.Exit(2) from None


def plain_help(command: Any, ctx: Any) -> None:
    """Help and usage lines as click writes them, where typer 0.29 differs: on/off options (--help too) bare,
    not `--dry-run <bool>`, which reads as if it took a value; arguments in the usage line as QUERY and
    [QUERY], not {query}."""
    help_option = command.get_help_option(ctx) if hasattr(command, "get_help_option") else None
    for param in [*getattr(command, "params", []), *([help_option] if help_option is not None else [])]:
        if getattr(param, "is_flag", False) and not getattr(param, "metavar", None):
            param.metavar = ""
        elif getattr(param, "param_type_name", "") == "argument" and "_usage_display_name" not in vars(param):
            param.metavar = (param.metavar or param.name).upper()
            param._usage_display_name = partial(_usage_name, param)
    for sub in getattr(command, "commands", {}).values():
        plain_help(sub, ctx)


def _usage_name(param: Any) -> str:
    name = param.metavar if param.required else f"[{param.metavar}]"
    return name + ("..." if param.nargs != 1 else "")


def _is_control_flow(exc: BaseException) -> bool:
    """typer's (vendored click's) Exit, Abort and usage errors: not failures of a command."""
    return type(exc).__module__.split(".")[0] in {"typer", "click"}


def needs_existing_store(ctx: Any) -> bool:
    """Whether the subcommand about to run reads a store that must already exist."""
    name = ctx.invoked_subcommand
    if not name or name in STORE_CREATORS or name in NO_STORE_NEEDED or ctx.resilient_parsing:
        return False
    rest = ctx.meta.get("engram.args", [])
    if any(a in {"--help", "-h"} for a in rest):
        return False
    command = ctx.command.get_command(ctx, name)
    return not (hasattr(command, "get_command") and len(rest) <= 1)  # a bare group prints its help
