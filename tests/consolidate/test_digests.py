"""Digests: the night lists what the user said across turns (a day's session openers, a topic's turns), each
digest resting on the turns it lists; the similarity stages leave digests alone; a regrouped day supersedes."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from engram.consolidate.context import StageContext
from engram.consolidate.digests import (
    DIGEST_ENTRIES,
    chunks,
    coherent,
    day_groups,
    digest_text,
    lead,
    replies,
    reply_lead,
    widest,
)
from engram.consolidate.fact_keys import KEYS_VERSION
from engram.consolidate.runner import Tools, run_stage
from engram.embed.models import from_settings
from engram.query.search import search_memory
from engram.store import db
from engram.store.ingest import add_episodes

T0 = datetime(2024, 3, 15, 9, 0)


def test_lead_is_the_first_sentence_of_the_first_line_of_prose() -> None:
    assert lead("I'm building a budget tracker in Flask. It has to be done by April.") == \
        "I'm building a budget tracker in Flask."
    assert lead("```python\nx = 1\n```\n\n- Move the   database to Postgres!  Then deploy.") == \
        "Move the database to Postgres!"
    assert lead("Cancel Friday. I am sick today.") == "Cancel Friday."  # a person's short sentence is kept
    assert lead("Dr. Patel said my knee needs rest. No running.") == "Dr. Patel said my knee needs rest."
    long = "word " * 80
    cut = lead(long, 40)
    assert cut.endswith(" ...") and len(cut) <= 44 and "  " not in cut


def test_a_reply_is_quoted_by_its_first_sentence_of_three_words_or_more() -> None:
    assert reply_lead("Sure! Let's plan the schema first. Then the routes.") == "Let's plan the schema first."
    assert reply_lead("Certainly!\n\n## Setup\n\nInstall Flask with pip.") == "Install Flask with pip."
    assert reply_lead("Ok. Thanks.") == "Ok."  # every sentence short: the first
    assert reply_lead("```python\nx = 1\n```") == ""  # code is no sentence
    assert reply_lead("    import flask\n    app = flask.Flask()") == ""  # nor is indented code


def test_day_groups_take_each_sessions_first_turn_by_day() -> None:
    sessions = ["a", "a", "b", "c", "c", None]
    times = [T0 + timedelta(minutes=5), T0, T0 + timedelta(hours=1), T0 + timedelta(days=1),
             T0 + timedelta(days=1, minutes=1), T0]
    groups = sorted(sorted(g) for g in day_groups(sessions, times))
    assert groups == [[1, 2], [3]]  # session a opened with row 1 (the earlier), c on the next day


def test_a_thread_keeps_only_members_close_to_the_others() -> None:
    eye = np.eye(4, dtype=np.float32)
    assert len(coherent(eye, [0, 1, 2, 3], 0.5)) < 2  # four unrelated turns are no topic
    near = np.array([[1, 0.1, 0], [1, 0, 0.1], [1, 0.05, 0.05], [0, 0, 1]], dtype=np.float32)
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    assert coherent(near, [0, 1, 2, 3], 0.5) == [0, 1, 2]  # the stray row goes, the topic stays


def test_a_topic_found_twice_is_one_thread() -> None:
    assert widest([[1, 2], [1, 2, 3], [4, 5], [5, 4], [2, 6]]) == [[1, 2, 3], [4, 5], [2, 6]]


def test_chunks_are_in_time_order_even_and_never_a_lone_turn() -> None:
    times = [T0 + timedelta(minutes=m) for m in range(DIGEST_ENTRIES + 1)]
    rows = list(reversed(range(DIGEST_ENTRIES + 1)))
    assert chunks(rows, times) == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]  # 9 turns: 5 + 4, no turn left out
    assert chunks(rows[:DIGEST_ENTRIES], times, size=3) == [[1, 2, 3], [4, 5, 6], [7, 8]]
    assert chunks([4], times) == []


def test_digest_text_lists_each_turn_under_a_heading() -> None:
    times = [T0, T0 + timedelta(days=20)]
    text = digest_text("thread", [0, 1], ["I use Flask. Really.", "I moved to Postgres."], ["user", "Ann"], times)
    assert text.splitlines() == ["One topic across sessions, 2024-03-15 to 2024-04-04:",
                                 "2024-03-15 user: I use Flask.", "2024-04-04 Ann: I moved to Postgres."]
    assert digest_text("day", [0], ["Hi."], [None], times).splitlines() == ["How each session of 2024-03-15 began:",
                                                                            "2024-03-15 someone: Hi."]


def test_digest_text_quotes_the_reply_a_turn_got() -> None:
    times = [T0, T0 + timedelta(minutes=1), T0 + timedelta(days=1)]
    said = ["I use Flask.", "Absolutely! Here is a Flask layout.\n\n# App", "Now Postgres."]
    text = digest_text("thread", [0, 2], said, ["user", "assistant", "user"], times, {0: 1})
    assert text.splitlines()[1:] == ["2024-03-15 user: I use Flask. / assistant: Here is a Flask layout.",
                                     "2024-03-16 user: Now Postgres."]


def turn_columns(*turns: tuple) -> dict[str, list]:
    """Episode columns of (session, role, minute, content[, kind, tags, is_private]) turns, in time order."""
    cols: dict[str, list] = {c: [] for c in ("session_id", "role", "created_at", "content", "kind", "tags",
                                             "is_private", "visibility", "origin")}
    for session, role, minute, content, *rest in turns:
        kind, tags, private = (*rest, *("turn", [], False)[len(rest):])
        origin = "tool" if role == "tool" else None
        for c, v in zip(cols, (session, role, T0 + timedelta(minutes=minute), content, kind, tuple(sorted(tags)),
                               private, "global", origin), strict=True):
            cols[c].append(v)
    return cols


def test_a_reply_is_the_next_agent_turn_of_the_same_session() -> None:
    cols = turn_columns(("a", "user", 0, "I use Flask."), ("b", "user", 1, "I use Django."),
                        ("a", "assistant", 2, "Flask is fine for this."), ("b", "user", 3, "Actually, Rails."),
                        ("b", "assistant", 4, "Rails works well too."), (None, "user", 5, "No session."),
                        (None, "assistant", 6, "An answer to nobody."))
    voiced = [r == "user" for r in cols["role"]]
    # sessions interleave; b's first turn went unanswered before its second; a turn without a session pairs
    # with nothing
    assert replies(cols, voiced, [False] * 7) == {0: 2, 3: 4}


def test_tool_output_thoughts_and_doubtful_replies_are_never_quoted() -> None:
    cols = turn_columns(("a", "user", 0, "Look up my orders."), ("a", "tool", 1, '{"rows": 3, "token": "x"}'),
                        ("a", "assistant", 2, "Thinking about the orders now.", "thought"),
                        ("a", "assistant", 3, "You have three open orders."))
    voiced = [True, False, False, False]
    assert replies(cols, voiced, [False] * 4) == {0: 3}  # tool output and a thought are passed over
    assert replies(cols, voiced, [False, False, False, True]) == {}  # a replaced reply is history
    cols["origin"][3] = "tool"  # a tool's result logged under the agent's role
    assert replies(cols, voiced, [False] * 4) == {}
    logged = turn_columns(("a", "user", 0, "Book the dentist."),
                          ("a", "calendar", 1, "Dentist moved to 3pm.", "event"),
                          ("a", "assistant", 2, "I booked the dentist for you."))
    assert replies(logged, [True, True, False], [False] * 3) == {0: 2}  # an event in between asks nothing

    def one(reply: tuple) -> dict[int, int]:
        return replies(turn_columns(("a", "user", 1, "I use Flask."), reply), [True, False], [False, False])

    assert one(("a", "assistant", 2, "Flask is fine for this.")) == {0: 1}
    assert one(("a", "assistant", 1, "Flask is fine for this.")) == {}  # same time: which came first is unknown
    assert one(("a", "assistant", 2, "Flask is fine for this.", "turn", ["work"], False)) == {}  # other tags
    assert one(("a", "assistant", 2, "Flask is fine for this.", "turn", [], True)) == {}  # more private
    assert one(("a", "assistant", 2, "```python\nimport flask\n```")) == {}  # nothing to quote


SESSIONS = [
    ("s1", "I'm starting a personal budget tracker in Flask with SQLite.", "Great, let's plan the schema."),
    ("s2", "I'm adding password hashing with Werkzeug to the budget tracker.", "Use generate_password_hash."),
    ("s3", "I'm deploying the budget tracker to Render with Gunicorn.", "Set the worker count to 3."),
]


def seed(settings, sessions, private: str | None = None, hour: int = 0) -> None:
    records = []
    for n, (sid, said, answered) in enumerate(sessions):
        at = T0 + timedelta(hours=hour + n)
        records.append({"id": f"{sid}-u", "user_id": "u", "session_id": sid, "role": "user", "content": said,
                        "created_at": at, "is_private": sid == private})
        records.append({"id": f"{sid}-a", "user_id": "u", "session_id": sid, "role": "assistant", "content": answered,
                        "created_at": at + timedelta(minutes=1)})
    add_episodes(records, settings)


def night(settings, run_id: str) -> None:
    ctx = StageContext(settings, "u", run_id, T0 + timedelta(days=1))
    tools = Tools(from_settings(settings))
    for stage in ("embed", "extract", "confidence", "merge", "digest"):
        run_stage(ctx, stage, tools)


def digests(settings) -> dict[str, tuple[str, str, str, bool, list[str]]]:
    with db.open_reader(settings) as con:
        rows = con.execute(
            "select f.id, f.category, f.status, f.text, f.is_private, list(s.episode_id order by s.episode_id) "
            "from facts f join fact_sources s on s.user_id = f.user_id and s.fact_id = f.id "
            "and s.relation = 'extracted_from' where f.user_id = 'u' and f.claim_type = 'digest' "
            "group by all").fetchall()
    return {r[0]: r[1:] for r in rows}


def test_a_day_digest_rests_on_the_users_session_openers_and_is_searchable(settings) -> None:
    seed(settings, SESSIONS[:2])
    night(settings, "r1")
    (fid, (category, status, text, private, sources)), = digests(settings).items()
    assert (category, status, private) == ("day", "active", False)
    assert sources == ["s1-a", "s1-u", "s2-a", "s2-u"]  # the user's turns, and the replies it quotes
    assert text.splitlines()[1:] == [f"2024-03-15 user: {SESSIONS[0][1]} / assistant: {SESSIONS[0][2]}",
                                     f"2024-03-15 user: {SESSIONS[1][1]} / assistant: {SESSIONS[1][2]}"]
    with db.open_reader(settings) as con:
        (evidence,) = con.execute("select evidence_count from facts where id = ?", [fid]).fetchone()
    assert evidence == 2  # a quoted reply is not evidence of what the user said
    with db.open_reader(settings) as con:
        events = con.execute("select action from fact_events where fact_id = ?", [fid]).fetchall()
        model, dim = con.execute("select embedding_model, embedding_dim from facts where id = ?", [fid]).fetchone()
        frame = db.rows(con, "queries/consolidate/tenant_fact_rows", user_id="u", model=model, dim=dim,
                        keys_version=KEYS_VERSION)
    assert events == [("created",)]
    assert frame and fid not in {r[0] for r in frame}  # the similarity stages' facts: the statements, not the digest
    hits = search_memory("what did I bring up about the budget tracker", "facts", 10, "u", settings=settings)
    assert fid in [h.id for h in hits]


def test_a_new_session_rebuilds_the_days_digest_and_supersedes_the_old(settings) -> None:
    seed(settings, SESSIONS[:2])
    night(settings, "r1")
    (old,) = digests(settings)
    seed(settings, SESSIONS[2:], hour=2)
    night(settings, "r2")
    found = digests(settings)
    assert found[old][1] == "superseded"
    (new,) = [f for f, row in found.items() if row[1] == "active"]
    assert found[new][4] == ["s1-a", "s1-u", "s2-a", "s2-u", "s3-a", "s3-u"]
    with db.open_reader(settings) as con:
        event = con.execute("select action, related_fact_id, run_id from fact_events where fact_id = ? "
                            "and action = 'superseded'", [old]).fetchall()
    assert event == [("superseded", new, "r2")]


def test_a_digest_is_as_private_as_its_most_private_turn(settings) -> None:
    seed(settings, SESSIONS[:2], private="s2")
    night(settings, "r1")
    ((_, _, _, private, _),) = digests(settings).values()
    assert private is True


def test_a_private_reply_is_not_quoted_by_a_digest_of_public_turns(settings) -> None:
    seed(settings, SESSIONS[:2])
    with db.open_store(settings) as con:
        con.execute("update episodes set is_private = true where id = 's2-a'").fetchall()
    night(settings, "r1")
    ((_, _, text, private, sources),) = digests(settings).values()
    assert (private, sources) == (False, ["s1-a", "s1-u", "s2-u"]) and SESSIONS[1][2] not in text


def test_a_digest_quotes_no_reply_when_told_not_to(settings, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_DIGEST_REPLIES", "false")
    from engram.settings import load_settings

    plain = load_settings()
    seed(plain, SESSIONS[:2])
    night(plain, "r1")
    ((_, _, text, _, sources),) = digests(plain).values()
    assert sources == ["s1-u", "s2-u"] and " / assistant:" not in text


def test_digests_can_be_turned_off(settings, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_DIGESTS", "false")
    from engram.settings import load_settings

    off = load_settings()
    seed(off, SESSIONS[:2])
    night(off, "r1")
    assert digests(off) == {}



def active_digests(settings) -> list[tuple[str, str, list[str]]]:
    return sorted((row[0], fid, row[4]) for fid, row in digests(settings).items() if row[1] == "active")


def test_a_group_back_to_turns_it_once_had_gets_one_active_digest(settings) -> None:
    seed(settings, SESSIONS[:2])
    night(settings, "r1")
    seed(settings, SESSIONS[2:], hour=2)
    night(settings, "r2")
    with db.open_store(settings) as con:  # the third session is marked for removal
        con.execute("update episodes set status = 'removal' where user_id = 'u' and session_id = 's3'").fetchall()
    add_episodes([{"id": "s4-u", "user_id": "u", "session_id": "s4", "role": "user", "content": "Hello again.",
                   "created_at": T0 + timedelta(hours=20)}], settings)  # the next day
    night(settings, "r3")
    ((kind, fid, sources),) = active_digests(settings)
    assert (kind, sources) == ("day", ["s1-a", "s1-u", "s2-a", "s2-u"])
    first = [f for f, row in digests(settings).items() if row[4] == sources and f != fid]
    assert len(first) == 1 and digests(settings)[first[0]][1] == "superseded"  # r1's, never brought back


def retire_the_days_digest(settings) -> str:
    """Digest two sessions of a day, remove the second and add a turn the next day: the day's digest, which
    no group makes again."""
    seed(settings, SESSIONS[:2])
    night(settings, "r1")
    (old,) = digests(settings)
    with db.open_store(settings) as con:
        con.execute("update episodes set status = 'removal' where user_id = 'u' and session_id = 's2'").fetchall()
    add_episodes([{"id": "s4-u", "user_id": "u", "session_id": "s4", "role": "user", "content": "Hello again.",
                   "created_at": T0 + timedelta(hours=20)}], settings)  # the next day
    night(settings, "r2")
    return old


def test_a_digest_whose_turns_no_longer_group_is_retired(settings) -> None:
    old = retire_the_days_digest(settings)
    assert digests(settings)[old][1] == "superseded" and active_digests(settings) == []
    with db.open_reader(settings) as con:
        (reason,) = con.execute("select reason from fact_events where fact_id = ? and action = 'superseded'",
                                [old]).fetchone()
    assert reason == "its turns no longer make this digest"


def test_a_digest_holds_from_its_last_turn(settings) -> None:
    seed(settings, SESSIONS[:2])
    night(settings, "r1")
    (fid,) = digests(settings)
    with db.open_reader(settings) as con:
        valid_from, asserted = con.execute("select valid_from, asserted_at from facts where id = ?", [fid]).fetchone()
    assert (asserted, valid_from) == (T0, T0 + timedelta(hours=1, minutes=1))  # the last reply it quotes


def test_a_retired_digest_leaves_the_turns_it_listed_current_in_search(settings) -> None:
    old = retire_the_days_digest(settings)
    assert digests(settings)[old][1] == "superseded"
    hits = {h.id: h for h in search_memory("plan the schema", "both", 10, "u", settings=settings)}
    assert hits["s1-a"].status == "active"  # the reply said nothing a newer value replaced


def test_turns_of_other_tags_never_share_a_digest(settings) -> None:
    records = [{"id": f"{sid}-u", "user_id": "u", "session_id": sid, "role": "user", "content": said,
                "created_at": T0 + timedelta(hours=n), "tags": [tag]}
               for n, ((sid, said, _), tag) in enumerate(zip(SESSIONS, ["work", "health", "work"], strict=True))]
    add_episodes(records, settings)
    night(settings, "r1")
    assert [sources for _, _, sources in active_digests(settings)] == [["s1-u", "s3-u"]]


def test_a_turn_listed_only_by_a_digest_is_still_reclustered(settings) -> None:
    seed(settings, [("s1", "how do I deploy it?", "With Gunicorn."), ("s2", "what about the logs?", "Use Loggly.")])
    night(settings, "r1")
    assert active_digests(settings)  # the two questions are listed by the day's digest
    with db.open_reader(settings) as con:
        ((model, dim),) = con.execute("select embedding_model, embedding_dim from episodes limit 1").fetchall()
        window = db.query(con, "queries/consolidate/consolidation_episodes", user_id="u", as_of=T0 + timedelta(days=1),
                          window_start=T0 - timedelta(days=1), model=model, dim=dim)
    assert {"s1-u", "s2-u"} <= set(window["id"].to_list())  # no fact rests on them: the LLM may see them again


def test_the_thought_db_lists_digests_and_refuses_to_edit_them(settings) -> None:
    import pytest

    from engram.errors import InvalidInput
    from engram.thoughtdb.claims import list_claims, supersede_claim

    seed(settings, SESSIONS[:2])
    night(settings, "r1")
    (fid,) = digests(settings)
    with db.open_store(settings) as con:
        assert [c["id"] for c in list_claims(con, "u", claim_type="digest")] == [fid]
        with pytest.raises(InvalidInput, match="claim_id: .* is a digest"):
            supersede_claim(con, "u", fid, "Something else.")


def test_a_digest_of_another_embedder_is_rebuilt(settings) -> None:
    seed(settings, SESSIONS[:2])
    night(settings, "r1")
    (old,) = digests(settings)
    with db.open_store(settings) as con:  # as if written under another embedder
        con.execute("update facts set embedding_model = 'older-model' where id = ?", [old]).fetchall()
    add_episodes([{"id": "s4-u", "user_id": "u", "session_id": "s4", "role": "user", "content": "Hello again.",
                   "created_at": T0 + timedelta(hours=20)}], settings)
    night(settings, "r2")
    assert digests(settings)[old][1] == "superseded"
    ((kind, new, sources),) = active_digests(settings)
    assert (kind, sources) == ("day", ["s1-a", "s1-u", "s2-a", "s2-u"]) and new != old


def test_a_digest_neither_restates_nor_updates_a_fact_near_it() -> None:
    from engram.query.hits import near_kind

    fact = {"text": "The user's standup is at 9:30.", "claim_type": "fact", "valid_from": T0}
    digest = {"text": "One topic across sessions:\n2024-03-16 user: The standup is at 10:30 now.",
              "claim_type": "digest", "valid_from": T0 + timedelta(days=1)}
    later = {**fact, "text": "The user's standup is at 10:30.", "valid_from": T0 + timedelta(days=1)}
    assert near_kind(fact, later) == "updates"  # a later value of the same statement takes the slot
    assert near_kind(fact, digest) == near_kind(digest, fact) == "apart"  # a list of turns is shown beside it


def test_a_digest_is_one_line_in_a_listing() -> None:
    from engram.query.hits import Hit
    from engram.query.render import hit_line

    hit = Hit(id="d", table="facts", text="One topic across sessions, 2024-03-15:\n2024-03-15 user: I use Flask.\n\x1b[2J",
              score=1.0, similarity=None, relevance=0.5, confidence=0.5, recency=0.0, lexical_score=0.0,
              created_at=None, content_hash="", claim_type="digest")
    line = hit_line(hit)
    assert "\n" not in line and "2024-03-15: | 2024-03-15 user: I use Flask. | \\x1b[2J" in line
