"""Every ad hoc SQL example in docs/foundation.md runs against a real store and finds the seeded rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes

DOC = Path(__file__).resolve().parents[2] / "docs" / "foundation.md"
EXAMPLES = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture
def seeded(settings: Settings, con: db.Connection) -> db.Connection:
    add_episodes([{"id": "demo-000", "user_id": "demo", "content": "I'm vegetarian.", "role": "user",
                   "created_at": "2026-11-01T09:00:00Z"}], settings, con=con)
    con.execute(
        "insert into facts (id, user_id, text, confidence, asserted_at, created_at, last_updated, "
        "last_reinforced_at, content_hash) values ('f_example', 'demo', 'The user is vegetarian', 0.8, "
        "now(), now(), now(), now(), 'h')"
    )
    con.execute("insert into fact_sources (user_id, fact_id, episode_id, relation, similarity) "
                "values ('demo', 'f_example', 'demo-000', 'extracted_from', 0.91)")
    con.execute("insert into llm_reviews (id, user_id, kind, subject_ids, reason, created_at) "
                "values ('r1', 'demo', 'merge', ['f_example'], 'ambiguous', now())")
    return con


def test_the_docs_have_examples_for_each_view() -> None:
    joined = "\n".join(EXAMPLES)
    for view in ("active_facts", "fact_lineage", "review_queue"):
        assert f"from {view}" in joined


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.splitlines()[0][3:40] for e in EXAMPLES])
def test_each_example_runs_and_returns_rows(seeded: db.Connection, example: str) -> None:
    rows = seeded.execute(example).fetchall()
    assert rows, example
