"""Memory text made safe for a terminal: control characters are shown escaped, never obeyed."""

from __future__ import annotations

import math
import re
from typing import Any

# C0 controls (ESC starts ANSI/OSC sequences, CR overwrites a line), DEL, C1 controls (0x9b is a
# one-byte CSI), and the bidi overrides/isolates that reorder what a reader sees.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_WITH_LAYOUT = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    return {"\r": "\\r", "\n": "\\n", "\t": "\\t"}.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def safe(text: Any, keep_layout: bool = False) -> str:
    """The text with control characters escaped (\\x1b, \\r, \\u202e); newlines and tabs kept when keep_layout."""
    return (_UNSAFE if keep_layout else _UNSAFE_WITH_LAYOUT).sub(_escape, str(text))


def echo(message: Any = "", err: bool = False) -> None:
    """typer.echo for human-readable output: one shared escape for every line that may hold memory text.

    Newlines and tabs are kept (reports span lines); everything else a terminal would obey is escaped.
    `--json` output does not come here: json.dumps already escapes control characters exactly.
    """
    import typer  # lazily: engram.explain formats with safe() without needing the CLI

    typer.echo(safe(message, keep_layout=True), err=err)


def cell(value: Any, width: int = 60) -> str:
    """One table cell: escaped, on one line, cut to `width` characters with an ellipsis."""
    if value is None:
        return ""
    if isinstance(value, float):
        text = "nan" if math.isnan(value) else f"{value:.4f}".rstrip("0").rstrip(".")
    else:
        text = safe(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def table_lines(columns: list[str], rows: list[tuple | list], width: int = 60) -> list[str]:
    """A plain text table: a header, a rule, one line per row; numbers right-aligned, text left-aligned."""
    cells = [[cell(v, width) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool)
                                  for r in rows if r[i] is not None) for i in range(len(columns))]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(list(columns)), "  ".join("-" * w for w in widths), *(line(r) for r in cells)]
