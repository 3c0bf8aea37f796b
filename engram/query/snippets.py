"""Snippet text helpers: cut at a sentence boundary, trust tiers."""

from __future__ import annotations

import re

from engram.index.bm25 import BM25
from engram.index.passages import spans
from engram.text.tokens import tokenize

MAX_SNIPPET_CHARS = 800
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)|\n")


def cut_at_sentence(text: str, max_chars: int = MAX_SNIPPET_CHARS) -> tuple[str, int, int]:
    """At most max_chars of text, ending at a sentence boundary when one exists; (text, start, end).

    start/end are character offsets into the original text. Without any sentence end in the first
    max_chars, the cut falls on the last whitespace (or hard at max_chars for one long word).
    """
    start = len(text) - len(text.lstrip())
    body = text[start:]
    if len(body.rstrip()) <= max_chars:
        piece = body.rstrip()
        return piece, start, start + len(piece)
    window = body[: max_chars + 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= max_chars]
    if ends:
        cut = ends[-1]
    else:
        space = window.rfind(" ", 0, max_chars + 1)
        cut = space if space > 0 else max_chars
    piece = body[:cut].rstrip()
    return piece, start, start + len(piece)


def trust_tier(table: str, confidence: float | None, origin: str | None) -> str:
    """green: consolidated and confident (>= 0.7); amber: 0.5-0.7, or a raw human/tool episode; red: the rest."""
    if table == "episodes":
        return "amber" if origin in ("human", "tool") else "red"
    c = confidence or 0.0
    return "green" if c >= 0.7 else "amber" if c >= 0.5 else "red"


def matching_passage(text: str, query: str) -> tuple[int, int] | None:
    """(start, end) of the passage of a long text (engram.index.passages) that best matches the query's
    words, scored as the lexical index scores passages (BM25 among the text's passages); the first passage
    (what the embedder reads) when no word matches. None for a text of one passage."""
    cut = spans(text)
    if len(cut) < 2:
        return None
    return cut[_best_span(text, cut, query)]


def _best_span(text: str, cut: list[tuple[int, int]], query: str) -> int:
    """Index of the span sharing most of the query's words (BM25 among the spans); the first when none does."""
    scores = BM25([tokenize(text[s:e]) for s, e in cut]).score(tokenize(query))
    return int(scores.argmax()) if scores.size and scores.max() > 0 else 0


_UNIT = re.compile(r"[^\n]*?(?:" + _SENTENCE_END.pattern + "|$)")  # a sentence or a line, up to its end


def _units(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line of the text, blank ones left out."""
    out = []
    for m in _UNIT.finditer(text):
        s, e = m.start(), m.end()
        piece = text[s:e]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((s + lead, s + len(piece.rstrip())))
        if e >= len(text):
            break
    return out


def passage_within(text: str, query: str, max_tokens: int) -> str:
    """The part of a long text that best matches the query, in at most max_tokens WordPiece tokens: the
    sentence (or line) that shares most of the query's words (BM25 among the text's sentences; the first
    when none does), grown by its neighbours while it fits; '…' marks where text was left out. A sentence
    longer than the budget is cut at a word, never inside one."""
    from engram.query.wordpiece import count_tokens, truncate_to_tokens

    units = _units(text)
    if not units or max_tokens < 2:
        return ""
    best = _best_span(text, units, query)
    room = max_tokens - 2  # the two ellipses
    # units are cut at white space, so a run of them costs the sum of their counts; only the units the
    # passage may reach are counted (a long reply is tokenized near its match, not whole)
    counted: dict[int, int] = {}

    def cost(i: int) -> int:
        if i not in counted:
            counted[i] = count_tokens(text[units[i][0]:units[i][1]])
        return counted[i]

    if cost(best) > room:
        piece = truncate_to_tokens(text[units[best][0]:units[best][1]], room)
        return ("… " if best > 0 else "") + piece + " …" if piece else ""
    lo = hi = best
    used = cost(best)
    grew = True
    while grew:
        grew = False
        # the sentence after first: an answer follows its question
        if hi + 1 < len(units) and used + cost(hi + 1) <= room:
            hi, used, grew = hi + 1, used + cost(hi + 1), True
        if lo > 0 and used + cost(lo - 1) <= room:
            lo, used, grew = lo - 1, used + cost(lo - 1), True
    piece = text[units[lo][0]:units[hi][1]]
    return ("… " if lo > 0 else "") + piece + (" …" if hi < len(units) - 1 else "")
