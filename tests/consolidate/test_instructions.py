"""Instructions and preferences are their own claims: typed as such, and current until revoked or replaced."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.consolidate.context import StageContext
from engram.consolidate.runner import Tools, run_stage, tenants_with_work
from engram.embed.models import from_settings
from engram.query.search import search_memory
from engram.store import db
from engram.store.ingest import add_episodes
from engram.text.atomic import atomic_statements
from engram.text.sentences import claim_type

T0 = datetime(2024, 3, 15, 9, 0)


def test_claim_type_of_instructions() -> None:
    assert claim_type("Always use APA 7th edition citation style when the user asks about references.") == "instruction"
    assert claim_type("Never use passive voice in my cover letters.") == "instruction"
    assert claim_type("Use bullet points whenever I ask about formatting options.") == "instruction"
    assert claim_type("The user prefers concise answers.") == "preference"
    assert claim_type("The user never met Michael.") == "fact"  # a statement about the user, not to the agent
    assert claim_type("The user always walks the dog at 7 am.") == "fact"


def test_an_instruction_said_by_the_user_is_stored_as_one() -> None:
    (st,) = atomic_statements("Always include data encryption details when I ask about data privacy.", "user", T0)
    assert st.text == "Always include data encryption details when the user asks about data privacy."
    assert claim_type(st.text) == "instruction"


def test_instructions_do_not_decay_out_and_stay_found(settings) -> None:
    add_episodes([
        {"id": "e0", "user_id": "u", "session_id": "s", "role": "user", "created_at": T0,
         "content": "Always format dates as month-day-year when I ask about deadlines."},
        {"id": "e1", "user_id": "u", "session_id": "s", "role": "user", "created_at": T0 + timedelta(minutes=1),
         "content": "My thesis draft has twelve chapters about coastal erosion."},
    ], settings)
    tools = Tools(from_settings(settings))
    for stage in ("embed", "extract"):
        run_stage(StageContext(settings, "u", "r1", T0 + timedelta(days=1)), stage, tools)
    years_later = T0 + timedelta(days=3 * 365)
    assert tenants_with_work(settings, years_later) == ["u"]  # the thesis fact decayed below the floor
    run_stage(StageContext(settings, "u", "r2", years_later), "deprecate", tools)
    with db.open_reader(settings) as con:
        rows = dict(con.execute("select claim_type, status from facts where user_id = 'u'").fetchall())
    assert rows == {"instruction": "active", "fact": "deprecated"}
    hits = search_memory("deadlines date format", "facts", 5, "u", as_of=years_later, settings=settings)
    assert [h.claim_type for h in hits] == ["instruction"]
