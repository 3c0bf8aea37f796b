"""Long episodes in search (issue 46): found by the words of any passage, on the exact and the published
index alike, shown with the passage that matched; replies on one topic are not folded into one."""

from __future__ import annotations

import pytest

from engram.embed.models import HashEmbedder
from engram.index import writer
from engram.index.cache import PERSISTED, table_index
from engram.index.merged import PersistedTableIndex
from engram.index.vector_index import CACHE
from engram.query import search_memory
from engram.query.hits import restates
from engram.query.snippets import matching_passage
from tests.query_seed import seed_episodes

FILLER = " ".join(["We can review the schedule, the budget and each milestone with the team every week."] * 12)
DEPLOY = "Deploy the API on Kubernetes with three replicas behind an nginx ingress."
LONG = f"## Plan\n\n{FILLER}\n\n## Testing\n\n{FILLER}\n\n## Hosting\n\n{DEPLOY}\n\nLet me know if this helps!"
TOPICS = "garden tea cat Oslo sister report budget river piano winter coffee train".split()


def _seed(settings, con):
    rows = [{"id": f"s{i}", "content": f"I mentioned the {w} and the {TOPICS[(i + 3) % len(TOPICS)]} again",
             "session_id": f"d{i}", "role": "user"} for i, w in enumerate(TOPICS * 3)]
    rows.append({"id": "long", "content": LONG, "session_id": "x", "role": "assistant"})
    seed_episodes(settings, con, rows)


@pytest.mark.parametrize("published", [False, True], ids=["exact", "published"])
def test_a_long_reply_is_found_by_its_last_passage_and_shows_it(settings, con, published):
    _seed(settings, con)
    if published:
        settings = settings.model_copy(update={"search_index": True, "search_index_min_rows": 0})
        emb = HashEmbedder(settings.embed_dim)
        assert writer.write_tenant(settings, con, "u1", emb.model, emb.dim)["episodes"]["written"]
    hits = search_memory("kubernetes replicas nginx ingress", "episodes", 3, "u1", settings=settings, con=con,
                         method="lexical")
    assert hits[0].id == "long"
    # the section it sits in: its heading, the paragraph and what follows up to the end
    at = LONG.index("## Hosting")
    assert hits[0].passage == {"start": at, "end": len(LONG), "text": LONG[at:]}
    short = search_memory("piano winter", "episodes", 3, "u1", settings=settings, con=con)
    assert short and all(h.passage is None for h in short if h.id != "long")


def test_matching_passage_falls_back_to_the_first_and_skips_short_texts():
    assert matching_passage("a short note", "note") is None
    first = matching_passage(LONG, "unrelated words entirely")
    assert first is not None and first[0] == 0
    start, end = matching_passage(LONG, "kubernetes")
    assert DEPLOY in LONG[start:end]


def test_two_replies_on_one_topic_both_shown_a_restatement_folded(settings, con):
    seed_episodes(settings, con, [
        {"id": "a", "content": "Your budget tracker should store expenses in SQLite and sync nightly."},
        {"id": "b", "content": "For the budget tracker, charts of monthly expenses help you spot trends."},
        {"id": "c", "content": "Your budget tracker should store expenses in SQLite and sync nightly!"},
    ])
    hits = search_memory("budget tracker expenses", "episodes", 5, "u1", settings=settings, con=con)
    shown = [h.id for h in hits]
    assert "b" in shown and len({"a", "c"} & set(shown)) == 1
    assert restates("Maria rents a flat near the harbour in Lisbon", "Maria rents a flat near the harbour in Porto")
    assert not restates("Your budget tracker should store expenses in SQLite",
                        "Charts of monthly expenses help you spot trends")


def test_the_published_index_and_its_delta_rank_long_replies_as_the_exact_path(settings, con):
    _seed(settings, con)
    on = settings.model_copy(update={"search_index": True, "search_index_min_rows": 0})
    emb = HashEmbedder(settings.embed_dim)
    writer.write_tenant(on, con, "u1", emb.model, emb.dim)
    # written after the publish: read from the store as the delta, a long one among them
    seed_episodes(settings, con, [
        {"id": "late_long", "content": LONG.replace("Kubernetes", "Nomad"), "session_id": "y", "role": "assistant"},
        {"id": "late", "content": "Nomad replicas were my idea", "session_id": "z", "role": "user"},
    ])
    for query in ("nomad replicas ingress", "kubernetes replicas", "budget milestone piano"):
        for method in ("hybrid", "lexical"):
            CACHE.clear()
            PERSISTED.clear()
            indexed = search_memory(query, "episodes", 5, "u1", settings=on, con=con, method=method)
            exact = search_memory(query, "episodes", 5, "u1", settings=settings, con=con, method=method)
            assert [h.id for h in indexed] == [h.id for h in exact], (query, method)
            assert [h.passage for h in indexed] == [h.passage for h in exact]
    index = table_index(con, on, "episodes", "u1", emb.model, emb.dim)
    assert isinstance(index, PersistedTableIndex) and index.delta.n == 2
