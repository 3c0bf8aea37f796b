"""Prose of a message: what can hold a statement once its markup and code are set aside.

Agent transcripts are markdown: headings, bullet lists, tables, fenced code, a closing offer to the
reader. None of that states anything about the people the memory is about. `prose_blocks` reads a
message by its structure (lines, blank lines, fences, list markers) and returns the blocks of running
prose, each to be cut into sentences on its own (a list item never runs into the next one). The rules
are on structure only, never on a phrase: fenced and indented code, headings, rules, table rows and
code-like lines are dropped; a list item is kept only when it is a sentence (ends as one), with a
leading "**Label**:" cut; a block ending in a colon (the lead-in to a list or code) is dropped;
emphasis and inline-code marks are unwrapped.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_RULE = re.compile(r"^\s{0,3}([-*_=])(\s*\1){2,}\s*$")
_TABLE = re.compile(r"^\s*\|.*\|\s*$|^\s*:?-{3,}:?\s*\|")
_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|[a-zA-Z][.)])\s+")
_LABEL = re.compile(r"^\s*(?:\*\*|__)([^*_]{1,80})(?:\*\*|__)\s*[:\-\u2013\u2014]?\s*")
_PLAIN_LABEL = re.compile(r"^\s*([A-Z][\w /&()'-]{0,60}):\s+(?=\S)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_INDENTED = re.compile(r"^(\t| {4,})\S")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
_CODE_START = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |return\b|if \(|for \(|while \(|const |let |var |function\b"
    r"|public |private |#include|@\w+|\$ |>>> |[\w.]+\s*=\s*\S|[\w.\[\]'\"]+\(.*\)\s*;?$|[{}\[\]()<>/]+;?$)")
_SYMBOLS = re.compile(r"[^\w\s.,!?'\"%$-]")
CODE_SYMBOL_SHARE = 0.12  # a line this dense in brackets, operators and the like is code, not prose
MIN_ITEM_WORDS = 4
PASSAGE_WORDS = 150  # ~200 WordPiece tokens of English prose: inside MiniLM's 256


def is_code_line(line: str) -> bool:
    """A line that reads as code: it opens like a statement of a program, or is dense in symbols."""
    stripped = line.strip()
    if not stripped:
        return False
    if _CODE_START.match(stripped):
        return True
    return len(_SYMBOLS.findall(stripped)) / len(stripped) > CODE_SYMBOL_SHARE


def _unwrap(text: str) -> str:
    return " ".join(_EMPHASIS.sub("", text).split())


def _item_text(line: str) -> str | None:
    """A list item's text when it is a sentence (its label cut), else None: a bare label states nothing."""
    text = _ITEM.sub("", line, count=1)
    text = _LABEL.sub("", text, count=1)
    text = _PLAIN_LABEL.sub("", text, count=1)
    text = _unwrap(text)
    if len(text.split()) < MIN_ITEM_WORDS or not _SENTENCE_END.search(text):
        return None
    return text


def has_markup(text: str) -> bool:
    """Whether the text has any line-level structure (fences, headings, lists, tables, indented code)."""
    return any(_FENCE.match(x) or _HEADING.match(x) or _ITEM.match(x) or _TABLE.match(x) or _RULE.match(x)
               for x in text.splitlines())


def prose_blocks(text: str) -> list[str]:
    """The message's running prose, one block per paragraph or list item, markup and code left out."""
    if "\n" not in text and not _FENCE.match(text) and not _HEADING.match(text):
        one = _without_lead_in(_unwrap(text))
        return [one] if one and not is_code_line(one) else []
    blocks: list[str] = []
    para: list[str] = []
    fenced = False
    prev_blank = True

    def flush() -> None:
        if para:
            blocks.append(_unwrap(" ".join(para)))
            para.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            flush()
            fenced = not fenced
            continue
        if fenced:
            continue
        blank = not line.strip()
        if blank:
            flush()
        elif _HEADING.match(line) or _RULE.match(line) or _TABLE.match(line):
            flush()
        elif _ITEM.match(line):
            flush()
            item = _item_text(line)
            if item is not None and not is_code_line(item):
                blocks.append(item)
        elif (prev_blank and _INDENTED.match(line)) or is_code_line(_unwrap(line)):
            flush()
        elif _LABEL.match(line) and not _SENTENCE_END.search(line.strip()):
            flush()  # a bold line of its own is a heading
        else:
            para.append(line.strip())
        prev_blank = blank
    flush()
    # a block ending in a colon leads in to what follows it (a list, code): its last sentence states nothing
    return [kept for b in blocks if b and (kept := _without_lead_in(b))]


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def _without_lead_in(block: str) -> str:
    """The block without a closing sentence that ends in a colon ("I finished the review on May 3. Here's
    my code:" keeps its first sentence; a block that is only a lead-in keeps nothing)."""
    if not block.endswith(":"):
        return block
    parts = _SENTENCE_BREAK.split(block)
    kept = " ".join(parts[:-1]).strip()
    return kept if len(kept.split()) >= MIN_ITEM_WORDS else ""  # "Certainly! Here's how:" states nothing


def passages(text: str, max_words: int = PASSAGE_WORDS) -> list[tuple[int, int]]:
    """(start, end) character spans of a long message cut on its structure, for an index that reads a
    message in parts (MiniLM reads 256 tokens): blank-line blocks, with a heading starting a new passage
    and a fenced code block kept whole (one passage of its own, however long); consecutive blocks are
    joined up to `max_words` words. A message within `max_words` is one passage."""
    if len(text.split()) <= max_words:
        return [(0, len(text))] if text.strip() else []
    blocks: list[tuple[int, int, bool]] = []  # start, end, starts a section or is code
    pos, start, fenced, code_start = 0, None, False, 0
    for line in text.splitlines(keepends=True):
        end = pos + len(line)
        if _FENCE.match(line):
            if not fenced:
                if start is not None:
                    blocks.append((start, pos, False))
                    start = None
                fenced, code_start = True, pos
            else:
                fenced = False
                blocks.append((code_start, end, True))
        elif not fenced:
            if not line.strip():
                if start is not None:
                    blocks.append((start, pos, False))
                    start = None
            elif _HEADING.match(line):
                if start is not None:
                    blocks.append((start, pos, False))
                start = pos
                blocks.append((pos, pos, True))  # a section break
            elif start is None:
                start = pos
        pos = end
    if fenced:
        blocks.append((code_start, pos, True))
    elif start is not None:
        blocks.append((start, pos, False))
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for b_start, b_end, breaks in blocks:
        if b_start == b_end:
            if cur is not None:
                out.append(cur)
                cur = None
            continue
        is_code = breaks
        if cur is not None and (is_code or len(text[cur[0]:b_end].split()) > max_words):
            out.append(cur)
            cur = None
        if is_code:
            out.append((b_start, b_end))
        elif cur is None:
            cur = (b_start, b_end)
        else:
            cur = (cur[0], b_end)
    if cur is not None:
        out.append(cur)
    return [(s, e) for s, e in out if text[s:e].strip()]
