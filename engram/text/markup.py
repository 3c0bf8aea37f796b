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
        one = _unwrap(text)
        return [one] if one and not one.endswith(":") and not is_code_line(one) else []
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
    # a block ending in a colon leads in to what follows it (a list, code): it states nothing itself
    return [b for b in blocks if b and not b.endswith(":")]
