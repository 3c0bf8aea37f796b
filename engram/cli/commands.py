"""The list of modules that add commands to the `engram` CLI; each has `register(app)`."""

from __future__ import annotations

import importlib

import typer

# One line per command module; keep this list the only place that knows them all.
COMMAND_MODULES: list[str] = [
    "engram.cli.consolidate",
    "engram.cli.checks",
    "engram.cli.thought",
    "engram.cli.patch",
    "engram.cli.archive",
    "engram.cli.review",
    "engram.cli.query",
    "engram.cli.shard",
    "engram.cli.mcp",
    "engram.cli.snapshot",
    "engram.cli.forget",
]


def register(app: typer.Typer) -> None:
    """Add every command module's commands to the app."""
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
