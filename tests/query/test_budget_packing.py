"""Packing ranked memories into a token budget (engram.query.budget): pure logic, no store."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from engram.errors import InvalidInput
from engram.query.budget import below_replacements, candidate_count, interleaved, pack, require_budget
from engram.query.hits import Hit
from engram.query.snippets import passage_within
from engram.query.wordpiece import count_tokens

LONG = " ".join(f"Line {i} talks about the weather in general terms." for i in range(300))


def hit(id_: str, text: str, table: str = "facts", **kw) -> Hit:
    return Hit(id=id_, table=table, text=text, score=1.0, similarity=0.5, relevance=0.5, confidence=0.5,
               recency=0.5, lexical_score=0.5, created_at=datetime(2024, 5, 7), content_hash="h" + id_, **kw)


HITS = [
    hit("ep_long", LONG + " Maya's sister Anna is a nurse in Lisbon. " + LONG, "episodes", role="assistant"),
    hit("fct_anna", "The user's sister Anna is a nurse in Lisbon.", claim_type="fact",
        sources=[{"id": "ep_a", "created_at": datetime(2024, 5, 7), "text": "My sister Anna is a nurse."},
                 {"id": "ep_b", "created_at": datetime(2024, 5, 8), "text": "Anna works nights."}]),
    hit("fct_run", "The user runs every morning before work.", claim_type="preference"),
    hit("fct_tea", "The user prefers green tea to coffee.", claim_type="preference"),
]


@pytest.mark.parametrize("render", ["json", "text"])
@pytest.mark.parametrize("budget", [2, 5, 20, 45, 60, 100, 250, 400, 1500, 8000])
def test_the_payload_is_never_over_its_budget(render: str, budget: int) -> None:
    packed = pack(HITS, "Where does Anna work?", budget, render)
    assert packed.tokens == count_tokens(packed.payload) <= budget
    assert len(packed) == len(packed.items) <= len(HITS)
    if render == "json":
        body = json.loads(packed.payload)
        assert body.get("count", 0) == len(packed)  # below 14 tokens the reply is {}


def test_a_long_turn_is_shown_as_its_matching_passage_and_a_short_fact_whole() -> None:
    packed = pack(HITS, "Where does Anna work as a nurse?", 1500, "json")
    by_id = {item["id"]: item for item in packed.items}
    assert "fct_anna" not in by_id  # the passage shown holds its words
    assert by_id["fct_run"]["text"] == "The user runs every morning before work."
    passage = by_id["ep_long"]["text"]
    assert "Anna is a nurse in Lisbon" in passage and passage.startswith("…") and passage.endswith("…")
    assert count_tokens(passage) <= 1500 // 4
    assert by_id["ep_long"]["role"] == "assistant" and by_id["fct_run"]["date"] == "7 May 2024"
    assert [h.id for h in packed] == ["ep_long", "fct_run", "fct_tea"]  # shown in rank order
    fact = pack(HITS[1:], "Anna", 1500, "json").items[0]
    assert fact["sources"] == ["ep_a"] and fact["more_sources"] == 1
    assert "content_hash" not in fact and "parts" not in fact


def test_sources_and_explain_are_shown_only_when_asked_and_inside_the_budget() -> None:
    packed = pack(HITS[1:2], "Anna", 400, "json", include_sources=True, explain=True)
    item = packed.items[0]
    assert [s["id"] for s in item["sources"]] == ["ep_a", "ep_b"]
    assert item["sources"][0] == {"id": "ep_a", "date": "7 May 2024", "text": "My sister Anna is a nurse."}
    assert item["content_hash"] == "hfct_anna" and "relevance" in item
    assert packed.tokens <= 400


def test_the_same_words_are_not_shown_twice() -> None:
    twin = hit("fct_twin", "The user's sister Anna is a nurse in Lisbon.", claim_type="fact")
    packed = pack([HITS[1], twin, HITS[2]], "Anna nurse", 1500, "text")
    assert [h.id for h in packed] == ["fct_anna", "fct_run"]
    assert packed.omitted == 0  # a restatement is not a memory that did not fit


def test_limit_caps_the_count_and_what_did_not_fit_is_counted() -> None:
    packed = pack(HITS[1:], "Anna", 8000, "text", limit=1)
    assert len(packed) == 1 and packed.omitted == 2
    assert packed.payload.splitlines()[-1] == "(2 more matching memories not shown)"


def test_a_budget_below_the_smallest_memory_is_an_empty_list_with_a_reason() -> None:
    packed = pack(HITS[1:], "Anna", 30, "text")
    assert list(packed) == [] and packed.reason
    assert packed.payload.startswith("(max_tokens 30 is below the smallest matching memory")
    body = json.loads(pack(HITS[1:], "Anna", 60, "json").payload)
    assert body["count"] == 0 and body["results"] == [] and body["reason"]
    assert json.loads(pack(HITS, "Anna", 5, "json").payload) == {}  # not even the reason fits
    assert pack([], "Anna", 400, "json").reason == "no memory matches the query"


@pytest.mark.parametrize("bad", [0, -1, 1_000_001, 2.5, "400", True, None])
def test_a_budget_that_is_not_a_positive_integer_names_max_tokens(bad: object) -> None:
    with pytest.raises(InvalidInput, match="^max_tokens:"):
        require_budget(bad)
    with pytest.raises(InvalidInput, match="^max_tokens:"):
        pack(HITS, "Anna", bad, "json")  # type: ignore[arg-type]


def test_a_json_reply_of_one_token_is_refused_by_name() -> None:
    with pytest.raises(InvalidInput, match="^max_tokens: a JSON reply takes at least 2"):
        pack(HITS, "Anna", 1, "json")


def test_candidates_grow_with_the_budget_within_bounds() -> None:
    assert candidate_count(100, None) == 10 and candidate_count(1500, None) == 60
    assert candidate_count(100_000, None) == 100 and candidate_count(400, 30) == 30


def test_episodes_and_facts_are_drawn_in_turn_each_once() -> None:
    a, b, c = hit("a", "x"), hit("b", "y"), hit("c", "z")
    assert [h.id for h in interleaved([a, b], [c, a])] == ["a", "c", "b"]


def test_a_passage_never_cuts_a_word_and_marks_what_it_left_out() -> None:
    text = "Intro words here. " * 50 + "The webinar moved to March 27. " + "Outro words there. " * 50
    out = passage_within(text, "when is the webinar", 20)
    assert "webinar moved to March 27" in out and count_tokens(out) <= 20
    one_long = "word " * 400
    cut = passage_within(one_long, "word", 15)
    assert count_tokens(cut) <= 15 and all(w in ("word", "…") for w in cut.replace("…", " … ").split())


def test_an_episode_a_fact_replaced_is_moved_below_it_and_labelled() -> None:
    old = hit("ep_old", "I drink my coffee black every morning.", "episodes")
    new = hit("fct_tea2", "The user only drinks green tea now.", claim_type="fact",
              sources=[{"id": "ep_new", "created_at": None, "text": "Green tea only now."},
                       {"id": "ep_old", "created_at": None, "text": old.text, "replaced": True}])
    other = hit("fct_x", "The user runs.", claim_type="fact")
    assert [h.id for h in below_replacements([old, other, new])] == ["fct_x", "fct_tea2", "ep_old"]
    assert old.status == "superseded"
    assert pack([new, old], "coffee", 400, "json").items[-1]["status"] == "superseded"
