"""The query module: active search, passive context, retrieve-only snippets, inner voice, grounded answers."""

from engram.query.ask import ask
from engram.query.inner_voice import inner_voice
from engram.query.passive import build_context, prefetch_context, prefetched
from engram.query.retrieve import retrieve
from engram.query.search import Hit, search_memory

__all__ = ["Hit", "ask", "build_context", "inner_voice", "prefetch_context", "prefetched", "retrieve",
           "search_memory"]
