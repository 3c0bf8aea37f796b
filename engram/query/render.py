"""One line per search result, as the terminal shows it: relevance, type, date, status, text."""

from __future__ import annotations

from engram.query.search import Hit
from engram.text.terminal import safe


def hit_line(hit: Hit, width: int = 160) -> str:
    """'0.76  fact    2026-11-05               Green tea is all ...' (a text of several lines, such as a digest's,
    on one with " | " between its lines; control characters escaped)."""
    date = f"{hit.date:%Y-%m-%d}" if hit.date else "-         "
    status = hit.status if hit.status not in (None, "active") else "contested" if hit.contested else ""
    text = " | ".join(line.strip() for line in hit.text.splitlines() if line.strip())
    return f"{hit.relevance:.2f}  {hit.table[:-1]:7} {date}  {status:12} {safe(text[:width])}"
