"""`python -m engram.cli`: the engram command line."""

from engram.cli.app import app

app()
