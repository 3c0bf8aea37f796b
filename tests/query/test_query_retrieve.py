"""retrieve() against a temp store: each numbered behaviour of the retrieve-only spec."""

from __future__ import annotations

import numpy as np
import pytest

from engram.errors import EmbedderUnavailable, FeatureDisabled, InvalidInput
from engram.query.retrieve import retrieve
from engram.settings import load_settings
from tests.query_seed import seed_episodes, seed_facts

TOPIC = "the sailing boat on the harbour"


@pytest.fixture
def on(settings):
    """Settings with the inner-voice gate open."""
    return load_settings(enable_inner_voice=True)


def seed_topic(on, con, n_facts=10, n_eps=10):
    seed_facts(on, con, [{"id": f"f{i}", "text": f"Fact {i} about {TOPIC} number {i}", "confidence": 0.8}
                         for i in range(n_facts)])
    seed_episodes(on, con, [{"id": f"e{i}", "content": f"Thought {i} on {TOPIC} take {i}"} for i in range(n_eps)])


def test_gate_is_closed_by_default(settings, con):
    with pytest.raises(FeatureDisabled) as err:
        retrieve("x", user_id="u1", settings=settings, con=con)
    assert err.value.code == "feature_disabled"


def test_mix_06_top_k_10_gives_6_kg_and_4_thoughts(on, con):
    seed_topic(on, con)
    out = retrieve(TOPIC, top_k=10, mix=0.6, floor=0.0, user_id="u1", settings=on, con=con)
    types = [s["source_type"] for s in out["snippets"]]
    assert types.count("kg_observation") == 6 and types.count("thought") == 4
    scores = [s["score"] for s in out["snippets"]]
    assert scores == sorted(scores, reverse=True)  # global re-rank
    d = out["diagnostics"]
    assert (d["k_req"], d["k_ret"], d["kg_candidates"], d["thought_candidates"]) == (10, 10, 10, 10)
    assert d["provider"] == "hash" and d["dim"] == on.embed_dim and d["no_results"] is False
    first = out["snippets"][0]
    assert set(first) == {"id", "table", "source_type", "origin", "trust_tier", "created_at", "text", "score",
                          "content_hash", "span_start", "span_end"}


def test_backfill_when_kg_underflows(on, con):
    seed_topic(on, con, n_facts=2)
    out = retrieve(TOPIC, top_k=10, mix=0.6, floor=0.0, user_id="u1", settings=on, con=con)
    types = [s["source_type"] for s in out["snippets"]]
    assert types.count("kg_observation") == 2 and types.count("thought") == 8


def test_candidates_are_capped_per_source(on, con):
    seed_topic(on, con, n_facts=12, n_eps=12)
    out = retrieve(TOPIC, top_k=2, mix=0.5, floor=0.0, user_id="u1", settings=on, con=con)
    assert out["diagnostics"]["kg_candidates"] == 6 and out["diagnostics"]["thought_candidates"] == 6


def test_dimension_and_model_filter(on, con):
    seed_facts(on, con, [{"id": "wrong_dim", "text": TOPIC}], dim=16)
    seed_facts(on, con, [{"id": "wrong_model", "text": TOPIC + " again"}], model="other")
    seed_episodes(on, con, [{"id": "ok", "content": TOPIC}])
    out = retrieve(TOPIC, floor=0.0, user_id="u1", settings=on, con=con)
    assert [s["id"] for s in out["snippets"]] == ["ok"]
    assert out["diagnostics"]["kg_candidates"] == 0


def test_privacy_and_tags(on, con):
    seed_episodes(on, con, [
        {"id": "pub", "content": f"{TOPIC} public", "tags": ["boats"]},
        {"id": "priv", "content": f"{TOPIC} private", "is_private": True, "tags": ["boats"]},
        {"id": "other", "content": f"{TOPIC} other", "tags": ["misc"]},
    ])
    seed_facts(on, con, [{"id": "fpriv", "text": f"{TOPIC} secret", "is_private": True}])

    def got(**kw):
        return {s["id"] for s in retrieve(TOPIC, floor=0.0, user_id="u1", settings=on, con=con, **kw)["snippets"]}

    assert got() == {"pub", "other"}
    assert got(include_private=True) == {"pub", "other", "priv", "fpriv"}
    assert got(include_tags=["boats"]) == {"pub"}
    assert got(exclude_tags=["boats"]) == {"other"}


def test_dedupe_across_tables_by_content_hash(on, con):
    seed_facts(on, con, [{"id": "f", "text": "Ada prefers  TEA over coffee.", "confidence": 0.9}])
    seed_episodes(on, con, [{"id": "e", "content": "ada prefers tea over coffee."},
                            {"id": "e2", "content": "Ada walks her dog at seven."}])
    out = retrieve("Ada prefers tea", floor=0.0, user_id="u1", settings=on, con=con)
    ids = [s["id"] for s in out["snippets"]]
    assert len({"f", "e"} & set(ids)) == 1 and "e2" in ids
    assert len({s["content_hash"] for s in out["snippets"]}) == len(ids)


def test_long_text_is_cut_at_a_sentence_boundary(on, con):
    long = " ".join(f"Sentence {i} mentions {TOPIC}." for i in range(60))
    seed_episodes(on, con, [{"id": "long", "content": long}])
    snip = retrieve(TOPIC, floor=0.0, user_id="u1", settings=on, con=con)["snippets"][0]
    assert len(snip["text"]) <= 800 and snip["text"].endswith(".")
    assert long[snip["span_start"]:snip["span_end"]] == snip["text"]


def test_a_long_episode_snippet_is_the_passage_that_matched(on, con):
    filler = " ".join(["We can review the schedule and the budget with the team every week."] * 12)
    hosting = "Deploy the API on Kubernetes with three replicas behind an nginx ingress."
    long = f"## Plan\n\n{filler}\n\n## Notes\n\n{filler}\n\n{hosting}"
    seed_episodes(on, con, [{"id": "long", "content": long}])
    snip = retrieve("kubernetes replicas", floor=0.0, user_id="u1", settings=on, con=con)["snippets"][0]
    assert snip["id"] == "long" and snip["text"].endswith(hosting)
    assert long[snip["span_start"]:snip["span_end"]] == snip["text"]


def test_empty_results_carry_a_reason(on, con):
    empty = retrieve(TOPIC, user_id="u1", settings=on, con=con)
    assert empty["snippets"] == []
    assert empty["diagnostics"]["no_results"] is True and empty["diagnostics"]["reason"] == "no_candidates"
    seed_episodes(on, con, [{"id": "far", "content": "zzz qqq"}])
    below = retrieve(TOPIC, floor=0.99, user_id="u1", settings=on, con=con)
    assert below["snippets"] == [] and below["diagnostics"]["reason"] == "below_floor"
    assert below["diagnostics"]["floor_used"] == 0.99


def test_adaptive_floor_goes_down_to_min_floor(on, con):
    seed_episodes(on, con, [{"id": "far", "content": "zzz qqq"}])
    out = retrieve(TOPIC, user_id="u1", settings=on, con=con)
    assert out["diagnostics"]["floor_used"] == pytest.approx(on.min_floor)


class Broken:
    provider, model, dim = "hash", "hash-ngram-v1-384", 384

    def embed(self, texts):
        raise RuntimeError("model crashed")


class WrongShape(Broken):
    def embed(self, texts):
        return np.zeros((len(texts), 3), dtype=np.float32)


@pytest.mark.parametrize("embedder", [Broken(), WrongShape()])
def test_embedder_failure_is_typed(on, con, embedder):
    with pytest.raises(EmbedderUnavailable) as err:
        retrieve(TOPIC, user_id="u1", settings=on, con=con, embedder=embedder)
    assert err.value.code == "embedder_unavailable"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"top_k": 0}, "top_k"), ({"top_k": 51}, "top_k"), ({"mix": 1.5}, "mix"), ({"floor": -0.1}, "floor"),
     ({"query": ""}, "query"), ({"include_tags": "x"}, "include_tags")],
)
def test_invalid_params(on, con, kwargs, field):
    args = {"query": TOPIC} | kwargs
    with pytest.raises(InvalidInput, match=field) as err:
        retrieve(user_id="u1", settings=on, con=con, **args)
    assert err.value.code == "invalid_params"


def test_a_budget_leaves_out_the_last_snippets_until_the_reply_fits(on, con):
    import json

    from engram.query.wordpiece import count_tokens

    seed_topic(on, con)
    whole = retrieve(TOPIC, top_k=10, floor=0.0, user_id="u1", settings=on, con=con)
    out = retrieve(TOPIC, top_k=10, floor=0.0, user_id="u1", settings=on, con=con, max_tokens=600)
    assert count_tokens(json.dumps(out, ensure_ascii=False)) <= 600 < count_tokens(json.dumps(whole))
    kept = [s["id"] for s in out["snippets"]]
    assert kept and kept == [s["id"] for s in whole["snippets"]][:len(kept)]
    d = out["diagnostics"]
    assert d["k_ret"] == len(kept) and d["omitted_for_budget"] == 10 - len(kept)
    with pytest.raises(InvalidInput, match="^max_tokens: the reply's diagnostics alone"):
        retrieve(TOPIC, top_k=10, floor=0.0, user_id="u1", settings=on, con=con, max_tokens=20)
    with pytest.raises(InvalidInput, match="^max_tokens:"):
        retrieve(TOPIC, user_id="u1", settings=on, con=con, max_tokens=0)
