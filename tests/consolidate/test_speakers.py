"""Whose words become facts: a user's turns do, an assistant's stay episodes (settings per role and origin)."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.consolidate.context import StageContext
from engram.consolidate.llm_extract import ClusterInput, ExtractedFact, build_requests
from engram.consolidate.runner import Tools, run_stage
from engram.consolidate.speakers import makes_facts, split_voiced
from engram.embed.models import from_settings
from engram.llm.prompt_quote import read_data_block
from engram.settings import load_settings
from engram.store import db
from engram.store.ingest import add_episodes

T0 = datetime(2024, 3, 15, 9, 0)
TURNS = [
    ("user", "human", "I moved to Porto in 2021 and I work as a nurse at Santo Antonio hospital."),
    ("assistant", "human", "Porto has a great hospital network. You should update your CV with the hospital name."),
    ("bot", "model", "The user works night shifts at the hospital on weekends."),
    ("tool", "tool", "The weather in Porto is sunny and 21 degrees this afternoon."),
]


def seed(settings) -> list[str]:
    records = [{"id": f"e{i}", "user_id": "u", "session_id": "s", "role": role, "origin": origin,
                "content": text, "created_at": T0 + timedelta(minutes=i)} for i, (role, origin, text) in enumerate(TURNS)]
    add_episodes(records, settings)
    return [r["id"] for r in records]


def extracted_from(settings) -> dict[str, set[str]]:
    ctx = StageContext(settings, "u", "r1", T0 + timedelta(days=1))
    tools = Tools(from_settings(settings))
    for stage in ("embed", "extract"):
        run_stage(ctx, stage, tools)
    with db.open_reader(settings) as con:
        rows = con.execute("select f.text, s.episode_id from facts f join fact_sources s on s.user_id = f.user_id "
                           "and s.fact_id = f.id and s.relation = 'extracted_from' where f.user_id = 'u'").fetchall()
        consumed = con.execute("select count(*) from episodes where user_id = 'u' and consolidated_run_id = 'r1'"
                               ).fetchone()[0]
    assert consumed == len(TURNS)  # every turn is consumed, facts or not
    out: dict[str, set[str]] = {}
    for text, eid in rows:
        out.setdefault(eid, set()).add(text)
    return out


def test_only_the_users_turns_become_facts(settings) -> None:
    seed(settings)
    by_episode = extracted_from(settings)
    assert set(by_episode) == {"e0"}
    assert "The user moved to Porto in 2021" in by_episode["e0"]


def test_settings_let_an_agents_role_or_origin_make_facts(settings, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_FACT_SKIP_ROLES", "tool")
    monkeypatch.setenv("ENGRAM_FACT_ORIGINS", "human,model")
    seed(settings)
    assert set(extracted_from(load_settings())) == {"e0", "e1", "e2"}


def test_makes_facts_by_role_and_origin(settings) -> None:
    assert makes_facts("user", None, settings) and makes_facts("Caroline", "human", settings)
    assert not makes_facts("assistant", "human", settings)
    assert not makes_facts(" Assistant ", None, settings)
    assert not makes_facts("user", "model", settings)  # an inner-voice thought is the model's
    assert makes_facts("note", "tool", settings, "event")  # an event a tool logged is no one's words
    assert not makes_facts("assistant", "tool", settings, "event")


def test_llm_facts_need_a_human_episode_and_the_prompt_says_who_wrote_what() -> None:
    facts = [ExtractedFact("c", "The user accepted the plan to launch on May 1.", "fact", "work", ("a1", "u1")),
             ExtractedFact("c", "Flask blueprints group routes.", "fact", "code", ("a1",))]
    kept, dropped = split_voiced(facts, {"u1"})
    assert [f.text for f in kept] == ["The user accepted the plan to launch on May 1."] and dropped == 1
    cluster = ClusterInput("c", [("u1", "user", "Yes, let's launch on May 1.", T0),
                                 ("a1", "assistant", "Plan: launch on May 1.", T0)], frozenset({"a1"}))
    (request,) = build_requests([cluster], 100_000)
    records = read_data_block(request.prompt)
    assert [e["by"] for e in records[0]["episodes"]] == ["person", "agent"]
    assert "only agent episodes" in request.prompt
