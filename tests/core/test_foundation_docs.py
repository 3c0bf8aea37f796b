"""docs/foundation.md stays true: its configuration table is the one generated from Settings."""

from __future__ import annotations

import re
from pathlib import Path

from engram.config_table import END, START, config_table
from engram.settings import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "foundation.md"


def test_config_table_in_the_docs_is_current() -> None:
    text = DOC.read_text()
    table = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert table == config_table(), "regenerate with: python -m engram.config_table docs/foundation.md"


def test_config_table_lists_every_setting_with_default_and_bounds() -> None:
    rows = config_table().splitlines()[2:]
    names = [re.match(r"\| `ENGRAM_(\w+)`", r).group(1).lower() for r in rows]
    assert names == list(Settings.model_fields)
    top_k = next(r for r in rows if r.startswith("| `ENGRAM_TOP_K`"))
    assert "| int | `5` | 1 .. 50 |" in top_k
    key = next(r for r in rows if r.startswith("| `ENGRAM_GEMINI_API_KEY`"))
    assert "secret (optional)" in key and "`unset`" in key
    embedder = next(r for r in rows if r.startswith("| `ENGRAM_EMBEDDER`"))
    assert "one of `minilm`, `hash`, `gemini`, `sentence-transformers`" in embedder
