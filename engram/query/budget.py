"""Reads inside a token budget: the memories worth most per token, in a compact view, never over the budget.

An agent's context is counted in tokens, not result slots. A search ranks memories; this module chooses
which of them fill `max_tokens` of the payload the caller receives (the MCP reply's JSON text, the CLI's
lines, the Python hits' text), counted with the project's one tokenizer (engram.query.wordpiece):
- each memory is shown compactly (its text, type, date, status when not current, id; its sources as
  ids), a long one (an assistant turn, a digest) as the passage of it that matches the query;
- memories are taken by value per token, value falling with rank (DENSITY_POWER), a long one costing
  only its passage, and one that does not fit leaves its room to the shorter ones below it;
- the same information is never shown twice (a passage whose words an item already shown holds);
- what is chosen is shown in rank order, and the whole payload is counted and trimmed until it fits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engram import clock
from engram.errors import InvalidInput
from engram.query.hits import Hit
from engram.query.snippets import passage_within
from engram.query.wordpiece import count_tokens
from engram.text.terminal import safe
from engram.text.tokens import tokenize

MAX_BUDGET = 1_000_000
# A long memory shows at most this share of the budget (its matching passage), and never less than
# MIN_PASSAGE_TOKENS: at 1,500 tokens a passage of up to 375, so one turn cannot take the context.
PASSAGE_SHARE = 0.25
MIN_PASSAGE_TOKENS = 60
# Value of the memory at rank r (0 first): 1 / (RANK_OFFSET + r); taken by value / tokens ** DENSITY_POWER.
# With long memories already cut to their passage, rank order (power 0) held the answer more often than
# any power tried up to 1 on the dev chats (bench/quality/ANSWER_AT_BUDGET.md): a short memory still gets
# the room a long one ranked above it does not fit in.
RANK_OFFSET = 4.0
DENSITY_POWER = 0.0
# A passage whose search words are this much inside one item already shown says nothing new.
CONTAINED = 0.8
# A fact names its first source episode by id (a 24-token id each): more cost context the answer needs.
SOURCE_IDS_SHOWN = 1
TOKENS_PER_CANDIDATE = 25  # how many ranked memories a budget is chosen from: budget / this, within limits
MIN_CANDIDATES = 10
MAX_CANDIDATES = 100


def require_budget(value: Any, name: str = "max_tokens") -> int:
    """A positive integer budget, else InvalidInput naming the field."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BUDGET:
        raise InvalidInput(f"{name}: expected a positive integer of at most {MAX_BUDGET:,} tokens, got {value!r}")
    return value


def candidate_count(budget: int, limit: int | None) -> int:
    """How many ranked memories to choose from for a budget (at most `limit` are shown)."""
    n = min(max(budget // TOKENS_PER_CANDIDATE, MIN_CANDIDATES), MAX_CANDIDATES)
    return n if limit is None else min(max(n, limit), MAX_CANDIDATES)


def readable_date(value: datetime | None) -> str | None:
    """'7 May 2023': how a reader writes a day (fewer tokens than ISO, and the words a question uses)."""
    return None if value is None else clock.readable(value)


def memory_type(hit: Hit) -> str:
    """A fact's claim type (fact, preference, instruction, goal, digest, ...), or the episode's kind."""
    if hit.table == "facts":
        return hit.claim_type or "fact"
    return hit.kind or "episode"


def shown_text(hit: Hit, query: str, cap: int) -> str:
    """The whole text when it fits `cap` tokens, else the passage of it that matches the query."""
    # every word is at least one token: a text of more words than `cap` is not counted whole
    if len(hit.text.split()) <= cap and count_tokens(hit.text) <= cap:
        return hit.text.strip()
    return passage_within(hit.text, query, cap)


def compact_view(hit: Hit, text: str, include_sources: bool = False, explain: bool = False,
                 source_cap: int = MIN_PASSAGE_TOKENS, query: str = "") -> dict[str, Any]:
    """What a caller is shown of one memory: id, type, date (and until, when replaced), who said it (an
    episode), status when not current, text; its sources as ids (their text with include_sources); the
    score parts and hashes with explain."""
    out: dict[str, Any] = {"id": hit.id, "type": memory_type(hit)}
    if hit.table == "episodes" and hit.role:
        out["role"] = hit.role
    out["date"] = readable_date(hit.date or hit.created_at)
    if hit.valid_to is not None:
        out["until"] = readable_date(hit.valid_to)
    status = "contested" if hit.contested else hit.status
    if status not in (None, "active"):
        out["status"] = status
    out["text"] = text
    if hit.table == "facts" and hit.sources:
        if include_sources:
            out["sources"] = [_source_view(s, query, source_cap) for s in hit.sources]
        else:
            out["sources"] = [s["id"] for s in hit.sources[:SOURCE_IDS_SHOWN]]
            if len(hit.sources) > SOURCE_IDS_SHOWN:
                out["more_sources"] = len(hit.sources) - SOURCE_IDS_SHOWN
    if explain:
        out["relevance"] = hit.relevance
        out["parts"] = dict(hit.parts)
        out["content_hash"] = hit.content_hash
    return out


def _source_view(src: dict[str, Any], query: str, cap: int) -> dict[str, Any]:
    text = src.get("text") or ""
    shown = text.strip() if count_tokens(text) <= cap else passage_within(text, query, cap)
    out = {"id": src["id"], "date": readable_date(src.get("created_at")), "text": shown}
    if src.get("replaced"):
        out["replaced"] = True
    return out


# ---- payloads: what the caller receives, counted exactly

def json_payload(items: Sequence[dict[str, Any]], budget: int, omitted: int, reason: str | None) -> str:
    """The JSON reply an MCP client receives: results, their count, the tokens of this very text, the budget,
    how many matching memories did not fit, and why nothing is shown when nothing is."""
    body: dict[str, Any] = {"count": len(items), "results": list(items), "tokens": 0, "max_tokens": budget}
    if omitted:
        body["omitted"] = omitted
    if reason:
        body["reason"] = reason
    text = ""
    for _ in range(4):  # "tokens" counts the text that holds it: settle the number
        body["tokens"] = count_tokens(text) if text else 0
        new = json.dumps(body, ensure_ascii=False)
        if new == text:
            break
        text = new
    return text


def item_line(item: dict[str, Any]) -> str:
    """One memory on one line: '7 May 2023  fact  The user's sister Anna is a nurse.  [fct_...]'."""
    kind = item["type"] + (f" ({item['role']})" if item.get("role") else "")
    when = item.get("date") or "-"
    if item.get("until"):
        when += f" until {item['until']}"
    status = f"  [{item['status']}]" if item.get("status") else ""
    text = " | ".join(line.strip() for line in str(item["text"]).splitlines() if line.strip())
    return safe(f"{when}  {kind}{status}  {text}  [{item['id']}]")  # as a terminal prints it


def text_payload(items: Sequence[dict[str, Any]], budget: int, omitted: int, reason: str | None) -> str:
    """The lines the CLI prints and a Python caller reads: one memory a line (its sources below it when
    asked for), a last line saying what did not fit, or why nothing is shown."""
    lines: list[str] = []
    for item in items:
        lines.append(item_line(item))
        if "parts" in item:
            parts = ", ".join(f"{k} {v:.2f}" for k, v in item["parts"].items())
            lines.append(f"    relevance {item['relevance']:.2f} of {parts}")
        for src in item.get("sources", []) if isinstance(item.get("sources"), list) else []:
            if isinstance(src, dict):
                lines.append(safe(f"    from {src['id']} ({src.get('date') or '-'}): "
                                  + " | ".join(s.strip() for s in src["text"].splitlines() if s.strip())))
    if reason:
        lines.append(f"({reason})")
    elif omitted:
        lines.append(f"({omitted} more matching {'memory' if omitted == 1 else 'memories'} not shown)")
    return "\n".join(lines)


Render = Callable[[Sequence[dict[str, Any]], int, int, str | None], str]
RENDERERS: dict[str, Render] = {"json": json_payload, "text": text_payload}


SHORT_REASON = "max_tokens too small"
# the smallest whole replies, tried in turn when not even the reason fits (a JSON reply needs 2 tokens)
BARE_REPLIES: dict[Render, tuple[str, ...]] = {json_payload: ('{"count": 0, "results": []}', "{}"),
                                                text_payload: ("",)}
MIN_JSON_BUDGET = 2


class Packed(list):
    """The hits a budgeted read returns (a list of Hit, best first) with what the caller is sent: `items`
    (the compact views), `payload` (the exact text), `tokens` (its count), `budget`, `omitted` (matching
    memories that did not fit or said nothing new), `reason` (why the list is empty, when it is)."""

    def __init__(self, hits: Sequence[Hit], items: list[dict[str, Any]], payload: str, tokens: int, budget: int,
                 omitted: int, reason: str | None) -> None:
        super().__init__(hits)
        self.items, self.payload, self.tokens = items, payload, tokens
        self.budget, self.omitted, self.reason = budget, omitted, reason

    @property
    def text(self) -> str:
        """The payload (the rendered text the budget was counted on)."""
        return self.payload


@dataclass
class _Candidate:
    rank: int
    hit: Hit
    item: dict[str, Any]
    cost: int
    words: frozenset[str] = field(default_factory=frozenset)

    @property
    def density(self) -> float:
        return (1.0 / (RANK_OFFSET + self.rank)) / max(self.cost, 1) ** DENSITY_POWER


def pack(hits: Sequence[Hit], query: str, budget: int, render: str = "text", limit: int | None = None,
         include_sources: bool = False, explain: bool = False) -> Packed:
    """Choose among ranked `hits` what fills `budget` tokens of the rendered payload (`render`: "json" or
    "text"), by value per token, at most `limit` of them, shown in rank order; never over the budget."""
    budget = require_budget(budget)
    if render == "json" and budget < MIN_JSON_BUDGET:
        raise InvalidInput(f"max_tokens: a JSON reply takes at least {MIN_JSON_BUDGET} tokens, got {budget}")
    renderer = RENDERERS[render]
    cap = max(MIN_PASSAGE_TOKENS, int(budget * PASSAGE_SHARE))
    if not hits:
        payload = renderer([], budget, 0, "no memory matches the query")
        return _fitted([], [], payload, budget, 0, "no memory matches the query", renderer)
    cands = []
    for rank, hit in enumerate(hits):
        text = shown_text(hit, query, cap)
        if not text:
            continue
        item = compact_view(hit, text, include_sources, explain, min(cap, MIN_PASSAGE_TOKENS * 2), query)
        cost = _item_cost(item, render)
        cands.append(_Candidate(rank, hit, item, cost, frozenset(tokenize(text))))
    base = count_tokens(renderer([], budget, len(cands), None)) + 8  # room for the counts' digits
    left = budget - base
    chosen: list[_Candidate] = []
    said_nothing_new = 0
    for c in sorted(cands, key=lambda c: (-c.density, c.rank)):
        if limit is not None and len(chosen) >= limit:
            break
        if c.cost > left:
            continue
        if _restates(c, chosen):
            said_nothing_new += 1
            continue
        chosen.append(c)
        left -= c.cost
    chosen.sort(key=lambda c: c.rank)
    omitted = len(cands) - len(chosen) - said_nothing_new
    reason = None
    if not chosen:
        smallest = min((c.cost for c in cands), default=0)
        reason = (f"max_tokens {budget} is below the smallest matching memory ({smallest + base} tokens with the "
                  f"reply around it)")
    payload = renderer([c.item for c in chosen], budget, omitted, reason)
    return _fitted([c.hit for c in chosen], [c.item for c in chosen], payload, budget, omitted, reason, renderer)


def _fitted(hits: list[Hit], items: list[dict[str, Any]], payload: str, budget: int, omitted: int,
            reason: str | None, renderer: Render) -> Packed:
    """The payload trimmed (last item first) until its count is within the budget."""
    tokens = count_tokens(payload)
    while tokens > budget and items:
        hits, items, omitted = hits[:-1], items[:-1], omitted + 1
        if not items:
            reason = f"max_tokens {budget} is too small for any matching memory with the reply around it"
        payload = renderer(items, budget, omitted, reason)
        tokens = count_tokens(payload)
    if tokens > budget:  # even the empty reply does not fit: a shorter reason, then the bare reply
        reason = SHORT_REASON
        for payload in (renderer([], budget, omitted, reason), *BARE_REPLIES[renderer]):
            tokens = count_tokens(payload)
            if tokens <= budget:
                break
    return Packed(hits, items, payload, tokens, budget, omitted, reason)


def _item_cost(item: dict[str, Any], render: str) -> int:
    """Tokens one item adds to the payload (its JSON and the separator, or its line and the newline)."""
    if render == "json":
        return count_tokens(json.dumps(item, ensure_ascii=False)) + 1
    return count_tokens(text_payload([item], 0, 0, None)) + 1


def _restates(c: _Candidate, chosen: list[_Candidate]) -> bool:
    """Whether one item already chosen holds CONTAINED of this one's search words (or it is a source of a
    chosen fact that its passage says nothing beyond)."""
    if not c.words:
        return False
    for other in chosen:
        if len(c.words & other.words) >= CONTAINED * len(c.words):
            return True
    return False


def interleaved(first: Sequence[Hit], second: Sequence[Hit]) -> list[Hit]:
    """Two rankings taken in turn (first, second, first, ...), each memory once: the episodes as said and
    the facts drawn from them compete for the same budget, neither hidden under the other."""
    out: list[Hit] = []
    seen: set[str] = set()
    for i in range(max(len(first), len(second))):
        for ranking in (first, second):
            if i < len(ranking) and ranking[i].id not in seen:
                seen.add(ranking[i].id)
                out.append(ranking[i])
    return out


def below_replacements(hits: Sequence[Hit]) -> list[Hit]:
    """The ranking with each episode that stated what a fact here now replaces moved to just below that
    fact and labelled superseded: an old value is never shown above its replacement."""
    replaced_by = {src["id"]: h.id for h in hits if h.table == "facts"
                   for src in h.sources if src.get("replaced")}
    moved = [h for h in hits if h.table == "episodes" and h.id in replaced_by]
    out: list[Hit] = []
    for h in hits:
        if h.table == "episodes" and h.id in replaced_by:
            continue
        out.append(h)
        for ep in moved:
            if replaced_by[ep.id] == h.id:
                ep.status = "superseded"
                out.append(ep)
    return out
