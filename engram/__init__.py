"""engram: long-term memory for AI agents, consolidated nightly."""

from engram.errors import EngramError, InvalidInput, StoreError

__all__ = ["EngramError", "InvalidInput", "StoreError", "add_episodes"]


def add_episodes(*args, **kwargs):  # noqa: ANN002, ANN003 - thin re-export, see engram.store.ingest
    """Append episodes to the store (see :func:`engram.ingest.add_episodes`)."""
    from engram.store.ingest import add_episodes as _add

    return _add(*args, **kwargs)
