"""engram: long-term memory for AI agents, consolidated nightly."""

import logging

from engram.errors import EngramError, InvalidInput, StoreError

# A library writes nothing to stderr by itself: its log lines reach the handlers the application (or the
# `engram` CLI, engram.cli.logs) configures, and Python's last-resort stderr handler never fires for them.
logging.getLogger("engram").addHandler(logging.NullHandler())

__all__ = ["EngramError", "InvalidInput", "StoreError", "add_episodes"]


def add_episodes(*args, **kwargs):  # noqa: ANN002, ANN003 - thin re-export, see engram.store.ingest
    """Append episodes, each tenant's rows to its shard (see :func:`engram.store.ingest.add_episodes_routed`)."""
    from engram.store.ingest import add_episodes_routed

    return add_episodes_routed(*args, **kwargs)
