"""inner_voice test plan: 5 thoughts, top_k 3, save, stage_kg, auto_mark_removal."""

from __future__ import annotations

import pytest

from engram.errors import FeatureDisabled, InvalidInput
from engram.llm.fake import FakeLLM
from engram.query.inner_voice import inner_voice
from engram.settings import load_settings
from tests.query_seed import seed_episodes

THOUGHTS = [
    ("t1", "Alice Martin uses DuckDB for the analytics pipeline. It is fast."),
    ("t2", "Alice Martin uses DuckDB for the billing reports too."),
    ("t3", "Alice Martin uses DuckDB and Polars for the analytics pipeline."),
    ("t4", "The office plants need water on Mondays."),
    ("t5", "Remember to renew the passport before June."),
]
QUERY = "Alice Martin uses DuckDB for the analytics pipeline"


@pytest.fixture
def on(settings):
    return load_settings(enable_inner_voice=True)


@pytest.fixture
def thoughts(on, con):
    seed_episodes(on, con, [{"id": i, "content": t, "kind": "thought", "origin": "model"} for i, t in THOUGHTS])
    seed_episodes(on, con, [{"id": "turn", "content": THOUGHTS[0][1] + " (said aloud)", "kind": "turn"}])


def statuses(con):
    return dict(con.execute("select id, status from episodes where user_id = 'u1'").fetchall())


def test_gate(settings, con):
    with pytest.raises(FeatureDisabled):
        inner_voice("x", user_id="u1", settings=settings, con=con)


def test_top_k_3_save(on, con, thoughts):
    out = inner_voice(QUERY, top_k=3, sim_thresh=0.3, user_id="u1", settings=on, con=con)
    ids = [s["thought_id"] for s in out["sources"]]
    assert sorted(ids) == ["t1", "t2", "t3"]  # only thoughts; the turn is not a thought
    sims = [s["similarity"] for s in out["sources"]]
    assert sims == sorted(sims, reverse=True) and min(sims) >= 0.3
    answer = out["synthesized_answer"]
    assert 0 < len(answer) <= 600
    assert all(line in dict(THOUGHTS)[i] for line, i in zip(answer.splitlines(), ids, strict=False))
    saved = con.execute(
        "select kind, is_summary, summary_of, pipeline, status, content, embedding_dim from episodes "
        "where user_id = 'u1' and id = $id", {"id": out["saved_thought_id"]}
    ).fetchall()
    assert saved == [("thought", True, ids, "inner_voice", "active", answer, on.embed_dim)]
    assert out["staged"] == {"pending_entities": 0, "pending_relationships": 0}
    assert out["marked_for_removal"] == []
    assert set(statuses(con).values()) == {"active"}


def test_no_save_writes_nothing(on, con, thoughts):
    before = con.execute("select count(*) from episodes").fetchall()
    out = inner_voice(QUERY, top_k=3, sim_thresh=0.3, save=False, user_id="u1", settings=on, con=con)
    assert out["saved_thought_id"] is None and out["sources"]
    assert con.execute("select count(*) from episodes").fetchall() == before


def test_threshold_filters_everything(on, con, thoughts):
    out = inner_voice("zebra quantum violin", top_k=3, sim_thresh=0.95, user_id="u1", settings=on, con=con)
    assert out["sources"] == [] and out["synthesized_answer"] == "" and out["saved_thought_id"] is None


def test_stage_kg_stages_capped_candidates_with_source(on, con, thoughts):
    out = inner_voice(QUERY, top_k=3, sim_thresh=0.3, stage_kg=True, confidence_min=0.5, max_nodes=3,
                      max_edges=2, user_id="u1", settings=on, con=con)
    ents = con.execute("select name, confidence, source_thought_id, status from kg_entity_candidates").fetchall()
    edges = con.execute("select src_name, relation, dst_name, source_thought_id from kg_edge_candidates").fetchall()
    assert out["staged"] == {"pending_entities": len(ents), "pending_relationships": len(edges)}
    assert 1 <= len(ents) <= 3 and len(edges) <= 2
    assert {e[2] for e in ents} <= {"t1", "t2", "t3"}
    assert all(e[1] >= 0.5 and e[3] == "pending" for e in ents)
    assert any(e[0] == "Alice Martin" for e in ents)
    assert con.execute("select count(*) from kg_entities").fetchall() == [(0,)]  # staged, not approved


def test_auto_mark_removal(on, con, thoughts):
    out = inner_voice(QUERY, top_k=3, sim_thresh=0.3, auto_mark_removal=True, user_id="u1", settings=on, con=con)
    assert out["marked_for_removal"] == ["t1", "t2", "t3"]
    st = statuses(con)
    assert [st[i] for i in ("t1", "t2", "t3", "t4", "t5", "turn")] == ["removal"] * 3 + ["active"] * 3
    assert st[out["saved_thought_id"]] == "active"


def test_llm_summarizer_plugs_in(on, con, thoughts):
    fake = FakeLLM(lambda prompt, schema: '{"summary": "Alice runs analytics on DuckDB."}')
    out = inner_voice(QUERY, top_k=3, sim_thresh=0.3, save=False, user_id="u1", settings=on, con=con, llm=fake)
    assert out["synthesized_answer"] == "Alice runs analytics on DuckDB."
    assert [c[0] for c in fake.calls] == ["InnerVoiceSummary"]


@pytest.mark.parametrize(("kwargs", "field"), [({"top_k": 0}, "top_k"), ({"sim_thresh": 2}, "sim_thresh"),
                                               ({"max_nodes": -1}, "max_nodes"), ({"content": ""}, "content")])
def test_invalid(on, con, kwargs, field):
    args = {"content": QUERY} | kwargs
    with pytest.raises(InvalidInput, match=field):
        inner_voice(user_id="u1", settings=on, con=con, **args)
