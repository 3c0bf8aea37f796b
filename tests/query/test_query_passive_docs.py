"""docs/query.md's passive-context snippet runs as written: default settings, prefetched(...) as memories."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.query.passive import PREFETCH, build_context, prefetch_context, prefetched
from tests.query_seed import seed_facts

DOC = Path(__file__).resolve().parents[2] / "docs" / "query.md"


def passive_snippet() -> str:
    """The first python block of the doc's 'Passive context' section."""
    section = DOC.read_text().split("## Passive context", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(autouse=True)
def _fresh_prefetch():
    PREFETCH._items.clear()
    yield
    PREFETCH._items.clear()


def test_documented_passive_snippet_runs_with_default_settings(settings, con, capsys):
    seed_facts(settings, con, [{"id": "lena", "user_id": "alice", "text": "Lena is allergic to peanuts",
                                "confidence": 0.9}])
    con.close()  # the snippet opens the store itself, from ENGRAM_DB_PATH
    exec(compile(passive_snippet(), str(DOC), "exec"), {})
    out = capsys.readouterr().out
    assert "You are a helpful cook." in out
    assert "Lena is allergic to peanuts" in out
    assert '"id": "lena"' in out


def test_build_context_takes_prefetched_hits_and_none(settings, con):
    seed_facts(settings, con, [{"id": "lena", "user_id": "alice", "text": "Lena is allergic to peanuts",
                                "confidence": 0.9}])
    pre = prefetch_context(["what should we cook for Lena?"], "alice", con=con)
    assert prefetched("alice") is pre and [h.id for h in pre.hits] == ["lena"]
    for memories in (pre, pre.hits):
        out = build_context(["hi"], memories=memories)
        assert [m["id"] for m in out["sections"]["memories"]] == ["lena"]
    assert build_context(["hi"], memories=prefetched("bob"))["sections"]["memories"] == []
    with pytest.raises(InvalidInput, match="prefetched"):
        build_context(["hi"], memories=["just text"])
