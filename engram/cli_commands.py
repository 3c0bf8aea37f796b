"""The list of modules that add commands to the `engram` CLI; each has `register(app)`."""

from __future__ import annotations

import importlib

import typer

# One line per command module; keep this list the only place that knows them all.
COMMAND_MODULES: list[str] = [
    "engram.cli_consolidate",
    "engram.cli_checks",
    "engram.cli_thought",
    "engram.cli_patch",
    "engram.cli_archive",
    "engram.cli_review",
    "engram.cli_query",
    "engram.cli_shard",
    "engram.cli_mcp",
    "engram.cli_eval",
]


def register(app: typer.Typer) -> None:
    """Add every command module's commands to the app."""
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
