"""ask(): grounded answers from facts only, verified citations and coverage, refusals, sessions."""

from __future__ import annotations

import json

import pytest

from engram.errors import FeatureDisabled
from engram.llm.fake import FakeLLM
from engram.llm.prompt_quote import read_data_block, read_data_blocks
from engram.query.ask import ask, grounding_coverage
from tests.query_seed import seed_episodes, seed_facts

FACTS = [
    {"id": "f1", "text": "Maya works as a nurse at the city hospital.", "confidence": 0.9},
    {"id": "f2", "text": "Maya works night shifts on weekends.", "confidence": 0.8},
    {"id": "f3", "text": "Maya's brother Tom is a chef.", "confidence": 0.7},
]


def sources_in(prompt: str) -> dict[str, str]:
    return {r["label"]: r["text"] for r in read_data_block(prompt)}


def responder(answer: str, n_cite: int = 2, fake_quote: bool = False):
    def respond(prompt, schema):
        src = sources_in(prompt)
        wanted = [lbl for lbl, text in src.items() if "works" in text][:n_cite]
        cites = [{"source": lbl, "quote": "Maya is a pilot" if fake_quote else src[lbl].split(" at ")[0]}
                 for lbl in wanted]
        return json.dumps({"answer": answer, "citations": cites, "confidence": 0.8})
    return respond


GOOD = "Maya works as a nurse at the city hospital and works night shifts on weekends."


def test_refuses_without_an_llm(settings, con):
    with pytest.raises(FeatureDisabled, match="ENGRAM_LLM"):
        ask("What does Maya do?", user_id="u1", settings=settings, con=con)


def test_grounded_answer_is_returned_and_persisted(settings, con):
    seed_facts(settings, con, FACTS)
    seed_episodes(settings, con, [{"id": "raw", "content": "Maya works XYZZY secret raw episode"}])
    fake = FakeLLM(responder(GOOD))
    out = ask("What work does Maya do?", user_id="u1", settings=settings, con=con, llm=fake)
    assert out["refused"] is False and out["answer"] == GOOD
    assert {s["id"] for s in out["sources"]} == {"f1", "f2"}
    assert out["coverage"] >= 0.6
    prompt = fake.calls[0][1]
    assert "XYZZY" not in prompt  # context from facts/KG only, never raw episodes
    row = con.execute(
        "select session_id, seq, query, answer, refused, sources, coverage, prompt_hash, model "
        "from ask_exchanges"
    ).fetchall()
    assert row == [(out["session_id"], 1, "What work does Maya do?", GOOD, False, ["f1", "f2"], out["coverage"],
                    out["prompt_hash"], "fake-llm")]
    assert len(out["prompt_hash"]) == 64
    columns = {c[0] for c in con.execute("describe ask_exchanges").fetchall()}
    assert "prompt" not in columns


@pytest.mark.parametrize(
    ("respond", "reason"),
    [
        (responder(GOOD, n_cite=1), "1 verified citation"),
        (responder(GOOD, fake_quote=True), "0 verified citation"),
        (responder("Maya works as a nurse and also flies rockets to Jupiter every Tuesday for NASA."), "coverage"),
        (responder(""), "no answer"),
    ],
)
def test_insufficient_grounding_is_refused(settings, con, respond, reason):
    seed_facts(settings, con, FACTS)
    out = ask("What work does Maya do?", user_id="u1", settings=settings, con=con, llm=FakeLLM(respond))
    assert out["refused"] is True and out["answer"] is None and reason in out["reason"]
    stored = con.execute("select refused, answer, reason from ask_exchanges").fetchall()
    assert stored == [(True, None, out["reason"])]


def test_too_little_memory_refuses_without_calling_the_llm(settings, con):
    seed_facts(settings, con, FACTS[:1])
    fake = FakeLLM(responder(GOOD))
    out = ask("What work does Maya do?", user_id="u1", settings=settings, con=con, llm=fake)
    assert out["refused"] and "need 2" in out["reason"] and fake.calls == []


def test_session_rolls_a_summary_after_10_exchanges(settings, con):
    seed_facts(settings, con, FACTS)
    fake = FakeLLM(responder(GOOD))
    session = None
    for i in range(11):
        out = ask(f"What work does Maya do? ({i})", session, user_id="u1", settings=settings, con=con, llm=fake)
        session = out["session_id"]
        if i == 8:
            assert con.execute("select summary from ask_sessions").fetchall() == [(None,)]
    n, summary, through = con.execute("select n_exchanges, summary, summary_through from ask_sessions").fetchall()[0]
    assert (n, through) == (11, 10)
    assert summary.count("Q: ") == 10 and "(9)" in summary
    assert read_data_blocks(fake.calls[-1][1])[1][0]["type"] == "conversation_summary"


def test_coverage_counts_supported_content_words():
    assert grounding_coverage("Maya is a nurse", ["Maya works as a nurse"]) == 1.0
    assert grounding_coverage("Maya flies rockets", ["Maya works as a nurse"]) == pytest.approx(1 / 3, abs=1e-3)
    assert grounding_coverage("", ["x"]) == 0.0
