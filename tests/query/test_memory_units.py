"""Search returns memory units: a fact with its source episodes folded under it, current over stale."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engram.consolidate.runner import STAGES, run_tenant
from engram.query.search import search_memory
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes

# recent enough that decay has not taken the facts out of search (an unreinforced fact lasts ~255 days)
T0 = (datetime.now(UTC) - timedelta(days=90)).replace(tzinfo=None, hour=9, minute=0, second=0, microsecond=0)


def _episodes() -> list[dict]:
    rows = [
        ("Ann", "I live in Lisbon.", T0),
        ("Ann", "My sister Lena works as a pilot for TAP.", T0 + timedelta(minutes=1)),
        ("Ann", "I live in Porto now.", T0 + timedelta(days=60)),
    ]
    return [{"id": f"e{i}", "user_id": "ann", "role": who, "session_id": f"s{i}", "content": text,
             "created_at": when.isoformat()} for i, (who, text, when) in enumerate(rows)]


def test_an_episode_is_searchable_right_after_it_is_added(settings: Settings) -> None:
    add_episodes([{"user_id": "ann", "content": "I keep my passport in the blue drawer.",
                   "created_at": T0.isoformat()}], settings)
    hits = search_memory("where is my passport?", "both", 5, "ann", settings=settings)
    assert [h.text for h in hits] == ["I keep my passport in the blue drawer."]
    assert hits[0].table == "episodes" and hits[0].status == "pending_embed"


def test_a_fact_folds_its_episodes_and_an_update_supersedes(settings: Settings) -> None:
    add_episodes(_episodes(), settings)
    run_tenant(settings, "ann", "run-1", T0 + timedelta(days=61), list(STAGES))
    with db.open_store(settings) as con:
        facts = dict(con.execute("select text, status from facts where user_id = 'ann'").fetchall())
        lisbon_valid_to = con.execute("select valid_to from facts where text like 'Ann lives in Lisbon%'").fetchall()
    assert facts["Ann lives in Porto now."] == "active"
    assert facts["Ann lives in Lisbon."] == "superseded"
    assert lisbon_valid_to == [(T0 + timedelta(days=60),)]
    assert facts["Ann's sister Lena works as a pilot for TAP."] == "active"

    hits = search_memory("where does Ann live?", "both", 5, "ann", settings=settings)
    texts = [h.text for h in hits]
    assert texts[0] == "Ann lives in Porto now."
    # the current fact stands where the replaced statement ranked, and lists it among its sources: the
    # old value is found (as history under the current one), never first, and neither episode is repeated
    assert hits[0].table == "facts" and [s["id"] for s in hits[0].sources] == ["e0", "e2"]
    # the Lisbon statement is marked as the history an update replaced (issue 45 #12), Porto's is the source
    assert {s["id"]: s.get("replaced", False) for s in hits[0].sources} == {"e0": True, "e2": False}
    assert "I live in Porto now." not in texts and "I live in Lisbon." not in texts
    assert len(texts) == len(set(texts))

    then = search_memory("where does Ann live?", "facts", 3, "ann", as_of=T0 + timedelta(days=1), settings=settings)
    assert then[0].text == "Ann lives in Lisbon."


def test_a_fact_found_only_by_its_episodes_words_is_not_cut_before_it_inherits(settings: Settings) -> None:
    # sixty distinct facts share the question's words; the answer's fact shares none of them, only its
    # episode (the question was asked in the same turn) does
    words = ("apple bread cheese dance eagle fiddle guitar hammock igloo jacket kettle lantern mango napkin orchard "
             "pepper quilt radish saddle tulip umbrella violin walnut yarn zebra anchor bucket candle dolphin engine "
             "falcon glacier harbor island jungle kayak lemon meadow nectar oyster").split()
    rows = [f"Ann's garden party had {words[i % 40]}{i} and {words[(i + 7) % 40]}{i}s and {words[(i + 3) % 40]}x{i}."
            for i in range(60)]
    rows.append("Where did the garden party guests park? Ann's cousin Teo left the cars behind the old mill.")
    add_episodes([{"id": f"g{i}", "user_id": "ann", "role": "Ann", "session_id": "s", "content": text,
                   "created_at": (T0 + timedelta(minutes=i)).isoformat()} for i, text in enumerate(rows)], settings)
    run_tenant(settings, "ann", "run-1", T0 + timedelta(days=1), list(STAGES))

    hits = search_memory("where did the garden party guests park?", "facts", 3, "ann", settings=settings)

    answer = [h for h in hits if h.text == "Ann's cousin Teo left the cars behind the old mill."]
    assert len(answer) == 1 and [s["id"] for s in answer[0].sources] == ["g60"]


def test_an_answer_that_leans_on_the_question_before_it_becomes_one_fact_with_it(settings: Settings) -> None:
    turns = [("Tim", "Woohoo! Congrats on the new team. Which team did you sign with?"),
             ("John", "The Minnesota Wolves! I can't wait to play with them!"),
             ("Tim", "Nice.")]
    add_episodes([{"id": f"t{i}", "user_id": "john", "role": who, "session_id": "s1", "content": text,
                   "created_at": (T0 + timedelta(minutes=i)).isoformat()} for i, (who, text) in enumerate(turns)],
                 settings)
    run_tenant(settings, "john", "run-1", T0 + timedelta(days=1), list(STAGES))
    with db.open_store(settings) as con:
        facts = con.execute("select f.text, list(s.episode_id order by s.episode_id) from facts f "
                            "join fact_sources s on s.fact_id = f.id and s.relation = 'extracted_from' "
                            "where f.user_id = 'john' group by f.text").fetchall()
    answer = "Which team did John sign with? The Minnesota Wolves! John can't wait to play with them!"
    assert dict(facts)[answer] == ["t0", "t1"]
    assert not any(text.startswith("Nice") for text, _ in facts)  # no question before it: nothing to answer

    hits = search_memory("Which team did John sign with?", "both", 3, "john", settings=settings)
    assert hits[0].table == "facts" and sorted(s["id"] for s in hits[0].sources) == ["t0", "t1"]
    assert not any(h.table == "episodes" and h.id in ("t0", "t1") for h in hits)  # folded under the fact


def test_you_in_a_stored_fact_names_the_one_who_spoke_the_turn_before(settings: Settings) -> None:
    turns = [("Melanie", "I finished my first pottery bowl last week!"),
             ("Caroline", "I'm so proud of you! I will bring you my old kiln next month."),
             ("Caroline", "I told you my kiln is in the garage.")]  # her own turn before: no one to name
    add_episodes([{"id": f"p{i}", "user_id": "mel", "role": who, "session_id": "s1", "content": text,
                   "created_at": (T0 + timedelta(minutes=i)).isoformat()} for i, (who, text) in enumerate(turns)],
                 settings)
    run_tenant(settings, "mel", "run-1", T0 + timedelta(days=1), list(STAGES))
    with db.open_store(settings) as con:
        texts = {t for (t,) in con.execute("select text from facts where user_id = 'mel'").fetchall()}
    assert "Caroline is so proud of Melanie!" in texts
    assert any(t.startswith("Caroline will bring Melanie Caroline's old kiln next month") for t in texts)
    assert "Caroline told you Caroline's kiln is in the garage." in texts


def test_what_user_1_and_user_2_say_of_themselves_neither_cancels_nor_replaces_the_other(settings: Settings) -> None:
    turns = [("User 1", "I'm a vegan. What about you?"), ("User 2", "I'm not a vegan, but I cook plant-based meals."),
             ("User 1", "I live in Lisbon."), ("User 2", "I live in Porto.")]
    add_episodes([{"id": f"v{i}", "user_id": "spc", "role": who, "session_id": "s1", "content": text,
                   "created_at": (T0 + timedelta(minutes=i)).isoformat()} for i, (who, text) in enumerate(turns)],
                 settings)
    run_tenant(settings, "spc", "run-1", T0 + timedelta(days=1), list(STAGES))
    with db.open_store(settings) as con:
        status = dict(con.execute("select text, status from facts where user_id = 'spc'").fetchall())
    assert status["User 1 is a vegan."] == "active"
    assert status["User 2 is not a vegan"] == "active"
    assert status["User 1 lives in Lisbon."] == "active" and status["User 2 lives in Porto."] == "active"
