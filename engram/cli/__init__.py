"""The `engram` command line: a typer app, one module per command group."""

from engram.cli.app import app

__all__ = ["app"]
