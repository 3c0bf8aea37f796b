"""Passive mode: prefetch memories for the next turn, and assemble a token-budgeted context."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engram import clock
from engram.errors import InvalidInput
from engram.llm.prompt_quote import (
    DATA_RULE,
    SHORT_DATA_RULE,
    data_line,
    memory_record,
    quote_memories,
)
from engram.query.common import require_int
from engram.query.search import Hit, search_memory
from engram.query.wordpiece import count_tokens, truncate_to_tokens
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id

PREFETCH_TURNS = 3      # the last N turns form the prefetch query
PREFETCH_K = 5          # memories cached for the next turn (3-5 diverse facts and episodes)
INSTRUCTION_SLOTS = 2   # standing instructions the request matches, offered before the other memories
SECTIONS = ("messages", "tool_results", "streamed", "system", "memories")
# The memories' quoting rule may take at most this share of the tokens left for them; past it the
# short form says the same (DATA_RULE is ~93 tokens: nearly half of a 200-token context)
RULE_SHARE = 0.1


@dataclass
class Prefetched:
    """Memories cached for a tenant's next turn."""

    user_id: str
    hits: list[Hit]
    created_at: datetime = field(default_factory=clock.now)


class PrefetchCache:
    """Per-process cache of the latest prefetch per (store, tenant)."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Prefetched] = {}
        self._lock = threading.Lock()

    def put(self, key: tuple[str, str], value: Prefetched) -> None:
        """Store the prefetch for a tenant."""
        with self._lock:
            self._items[key] = value

    def get(self, key: tuple[str, str]) -> Prefetched | None:
        """The latest prefetch of a tenant, if any."""
        with self._lock:
            return self._items.get(key)


PREFETCH = PrefetchCache()  # one per process: it must outlive the call that filled it


def prefetch_context(
    recent_turns: Sequence[str],
    user_id: str,
    *,
    settings: Settings | None = None,
    con: db.Connection | None = None,
    n_turns: int = PREFETCH_TURNS,
    k: int = PREFETCH_K,
    embedder: Any = None,
) -> Prefetched:
    """Search with the last n_turns as the query (passive thresholds) and cache the top k for the next turn;
    a standing instruction the request matches (among the best facts for it) is offered first.

    Without `settings` they come from the environment (ENGRAM_*, .env), as `engram context` reads them.
    """
    user_id = normalise_user_id(user_id)
    settings = for_tenant(settings or load_settings(), user_id)
    require_int(n_turns, "n_turns", 1, 50)
    require_int(k, "k", 1, 20)
    if isinstance(recent_turns, str) or not all(isinstance(t, str) for t in recent_turns):
        raise InvalidInput("recent_turns: must be a list of strings")
    turns = [t for t in recent_turns if t.strip()][-n_turns:]
    if not turns:
        raise InvalidInput("recent_turns: needs at least one non-empty turn")
    query = "\n".join(turns)
    hits = search_memory(query, "both", k, user_id, settings=settings, con=con, mode="passive", embedder=embedder)
    result = Prefetched(user_id, with_standing(hits, search_memory(
        query, "facts", k, user_id, settings=settings, con=con, mode="passive", embedder=embedder), k))
    PREFETCH.put((str(settings.db_path), user_id), result)
    return result


def with_standing(hits: list[Hit], facts: list[Hit], k: int) -> list[Hit]:
    """The top k memories with the instructions among `facts` (up to INSTRUCTION_SLOTS) placed first: a
    standing instruction ("always include X when I ask about Y") applies to the request it matches."""
    standing = [h for h in facts if h.claim_type == "instruction"][:INSTRUCTION_SLOTS]
    ids = {h.id for h in standing}
    return (standing + [h for h in hits if h.id not in ids])[:k]


def prefetched(user_id: str, settings: Settings | None = None) -> Prefetched | None:
    """The memories cached by the last prefetch_context of this tenant, if any (settings as prefetch_context)."""
    user_id = normalise_user_id(user_id)
    return PREFETCH.get((str(for_tenant(settings or load_settings(), user_id).db_path), user_id))


def memory_records(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """Prefetched hits as quotable memories: provenance (id, type, date) and text; a fact in dispute says
    so (contested: true), so the agent does not take one side of a contradiction as settled."""
    # a fact's date is when what it states holds (its valid_from), not the night that wrote it
    return [memory_record(h.id, h.table.removesuffix("s"), h.date or h.created_at, h.text,
                          **({"contested": True} if h.contested else {})) for h in hits]


Memories = Prefetched | Sequence[Hit] | Sequence[dict[str, Any]] | None


def _memories(value: Memories) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, Prefetched):
        value = value.hits
    if not isinstance(value, (str, dict)) and value and all(isinstance(m, Hit) for m in value):
        value = memory_records(value)
    if isinstance(value, (str, dict)) or not all(isinstance(m, dict) and isinstance(m.get("text"), str)
                                                  for m in value):
        raise InvalidInput("memories: must be prefetched(user_id), a list of hits, or a list of records with a text "
                           "(see prompt_quote.memory_record)")
    return [m for m in value if m["text"].strip()]


def _as_list(value: str | Sequence[str] | None, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{name}: must be a string or a list of strings")
    return [v for v in value if v.strip()]


# The block's markers hold 16 hex digits of its hash, twice: at most this many tokens each with "DATA-"
# and the angle brackets (a hex run splits into at most one WordPiece token a digit)
MARKER_TOKENS = 22


def _fit_memories(memories: list[dict[str, Any]], rule: str, left: int) -> tuple[list[dict[str, Any]], str, int]:
    """(picked, block, dropped): the memories, in order, whose quoted block fits `left` tokens. Each record is
    one line of the block, so lines are counted one by one against a bound of the markers; the block is then
    counted whole (markers, rule and JSON escaping included) and trimmed from the end until it fits."""
    room = left - count_tokens(rule) - 2 * MARKER_TOKENS
    picked: list[dict[str, Any]] = []
    dropped = 0
    for mem in memories:
        n = count_tokens(data_line(mem))
        if n <= room:
            picked.append(mem)
            room -= n
        else:
            dropped += 1
    block = quote_memories(picked, rule) if picked else ""
    while picked and count_tokens(block) > left:
        picked.pop()
        dropped += 1
        block = quote_memories(picked, rule) if picked else ""
    return picked, block, dropped


def quoting_rule(tokens_left: int) -> str:
    """The rule said before the memories: the full sentence when it costs at most RULE_SHARE of the
    tokens left for them, else its short form."""
    return DATA_RULE if count_tokens(DATA_RULE) <= RULE_SHARE * tokens_left else SHORT_DATA_RULE


def build_context(
    recent_messages: Sequence[str] | None = None,
    tool_results: Sequence[str] | None = None,
    streamed: Sequence[str] | None = None,
    system: str | Sequence[str] | None = None,
    budget: int = 1500,
    memories: Memories = None,
) -> dict[str, Any]:
    """Fit the parts into `budget` WordPiece tokens, in priority order.

    Recent messages first (newest kept first, shown in order; the newest is truncated if it alone
    overflows), then tool results (privileged: truncated rather than dropped), then streamed items
    (opportunistic: whole items only, when they fit), then system items, then memories (whole records
    only) fill what is left. Memories are never system text: they go in their own section, quoted as
    a data block with their provenance (prompt_quote), after the system section, under a rule in
    proportion to what is left (quoting_rule). `memories` takes what
    `prefetched(user_id)` returns (None when nothing was prefetched), search hits, or memory records.
    """
    budget = require_int(budget, "budget", 1, 1_000_000)
    parts = {
        "messages": _as_list(recent_messages, "recent_messages"),
        "tool_results": _as_list(tool_results, "tool_results"),
        "streamed": _as_list(streamed, "streamed"),
        "system": _as_list(system, "system"),
    }
    memory_items = _memories(memories)
    left = budget
    kept: dict[str, list[str]] = {s: [] for s in SECTIONS}
    dropped: dict[str, int] = {s: 0 for s in SECTIONS}
    truncated: dict[str, int] = {s: 0 for s in SECTIONS}

    def take(section: str, text: str, may_truncate: bool) -> bool:
        nonlocal left
        n = count_tokens(text)
        if n <= left:
            kept[section].append(text)
            left -= n
            return True
        if may_truncate and left > 0:
            cut = truncate_to_tokens(text, left)
            if cut:
                kept[section].append(cut)
                truncated[section] += 1
                left -= count_tokens(cut)
                return True
        dropped[section] += 1
        return False

    newest_first = list(reversed(parts["messages"]))
    for i, msg in enumerate(newest_first):
        if not take("messages", msg, may_truncate=i == 0):
            dropped["messages"] += len(newest_first) - i - 1
            break
    kept["messages"].reverse()
    for item in parts["tool_results"]:
        take("tool_results", item, may_truncate=True)
    for item in parts["streamed"]:
        take("streamed", item, may_truncate=False)
    for item in parts["system"]:
        take("system", item, may_truncate=True)
    rule = quoting_rule(left)
    picked, block, n_dropped = _fit_memories(memory_items, rule, left)
    dropped["memories"] += n_dropped
    tokens = {s: sum(count_tokens(t) for t in kept[s]) for s in SECTIONS}
    tokens["memories"] = count_tokens(block)
    shown = {s: "\n".join(kept[s]) for s in SECTIONS} | {"memories": block}
    text = "\n\n".join(shown[s] for s in ("system", "memories", "tool_results", "streamed", "messages") if shown[s])
    sections: dict[str, list[Any]] = {**kept, "memories": picked}
    return {
        "budget": budget, "total_tokens": sum(tokens.values()), "tokens": tokens, "sections": sections,
        "dropped": dropped, "truncated": truncated, "text": text,
    }
