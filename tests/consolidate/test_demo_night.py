"""The demo's sample through one night (MiniLM, no LLM, no Prefect): what a newcomer sees (issue 45)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from engram.cli.consolidate import SAMPLE_DATA
from engram.consolidate.runner import STAGES, run_tenant
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.ingest import add_episodes, read_records

AS_OF = datetime(2026, 11, 8, 3, 0)
USER = "demo"


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A store holding the demo's sample after one night without the publish stage."""
    path: Path = tmp_path_factory.mktemp("demo") / "engram.duckdb"
    settings = load_settings(db_path=path, embedder="minilm", llm="none")
    numbers, records = read_records(SAMPLE_DATA)
    add_episodes(records, settings, line_numbers=numbers)
    run_tenant(settings, USER, "night-1", AS_OF, [s for s in STAGES if s != "publish"])
    return settings


def _facts(settings: Settings) -> dict[str, tuple[str, str | None]]:
    """{text: (status, text of the fact that superseded it)}."""
    with db.open_reader(settings) as con:
        rows = con.execute(
            "select f.text, f.status, g.text from facts as f left join fact_events as e on e.user_id = f.user_id"
            " and e.fact_id = f.id and e.action = 'superseded' left join facts as g on g.user_id = e.user_id"
            " and g.id = e.related_fact_id where f.user_id = $u", {"u": USER}).fetchall()
    return {text: (status, newer) for text, status, newer in rows}


def test_an_update_goes_from_the_older_habit_to_the_newer(demo_store: Settings) -> None:
    facts = _facts(demo_store)
    ended = "The user stopped drinking coffee; the user only drinks green tea now."
    # both statements of the old habit are replaced by the statement that ended it
    assert facts["The user drinks the user's coffee black every morning."] == ("superseded", ended)
    assert facts["Black coffee every morning, that's the user's routine."] == ("superseded", ended)
    # the newer statements agree with each other about what goes on: none supersedes another
    for current in (ended, "These days the user drinks green tea instead of coffee.",
                    "Green tea is all the user drinks in the morning now."):
        assert facts[current][0] == "active", current


def test_an_instruction_aimed_at_the_assistant_stays_an_episode(demo_store: Settings) -> None:
    facts = _facts(demo_store)
    assert not any("instructions" in text.lower() for text in facts)  # issue 45 #6
    with db.open_reader(demo_store) as con:
        assert con.execute("select count(*) from episodes where user_id = $u and id = 'demo-027'",
                           {"u": USER}).fetchall() == [(1,)]


def test_a_relative_date_keeps_its_precision(demo_store: Settings) -> None:
    assert "Lena, the user's sister, moved to Lisbon last year (2025)." in _facts(demo_store)  # issue 45 #7


def test_a_contested_pair_stays_active_under_review(demo_store: Settings) -> None:
    facts = _facts(demo_store)
    assert facts["The user likes spicy food."][0] == facts["The user doesn't like spicy food."][0] == "active"
    with db.open_reader(demo_store) as con:
        assert con.execute("select count(*) from llm_reviews where user_id = $u and kind = 'contradiction'"
                           " and status = 'pending'", {"u": USER}).fetchall() == [(1,)]


def test_the_days_digests_leave_out_the_replaced_coffee(demo_store: Settings) -> None:
    with db.open_reader(demo_store) as con:
        rows = con.execute("select f.category, f.status, f.text from facts as f where f.user_id = $u"
                           " and f.claim_type = 'digest'", {"u": USER}).fetchall()
        coffee = con.execute("select count(*) from facts where user_id = $u and status = 'superseded'"
                             " and text ilike '%coffee black%'", {"u": USER}).fetchone()[0]
    assert coffee >= 1 and rows  # the night replaced the coffee with the tea, and wrote digests
    assert all(status == "active" for _, status, _ in rows)
    # a turn whose every statement has a newer value is history: no current digest lists it
    assert not any("coffee black" in text.lower() for _, _, text in rows)
