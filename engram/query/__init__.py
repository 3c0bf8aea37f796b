"""The query module: active search, passive context, retrieve-only snippets, inner voice, grounded answers."""

from engram.query.search import Hit, search_memory

__all__ = ["Hit", "search_memory"]
