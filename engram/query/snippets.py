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
    scores = BM25([tokenize(text[s:e]) for s, e in cut]).score(tokenize(query))
    best = int(scores.argmax()) if scores.size and scores.max() > 0 else 0
    return cut[best]
