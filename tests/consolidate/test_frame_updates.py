"""Knowledge updates by frame: a newer value of the same attribute supersedes the older one."""

from __future__ import annotations

from datetime import datetime

from engram.consolidate.updates import Update, frame_updates, restatement_runs

T1, T2, T3 = datetime(2023, 1, 1), datetime(2023, 6, 1), datetime(2024, 1, 1)


def test_a_new_value_supersedes_the_older_one_from_its_own_date() -> None:
    got = frame_updates(["a", "b"], ["Ann lives in Lisbon.", "Ann lives in Porto."], [T1, T2], {"b"})
    assert got == [Update("a", "b", T2)]


def test_each_value_is_superseded_by_the_next_different_one() -> None:
    texts = ["Who coaches the Lions? Jim Caldwell.", "Who coaches the Lions? Matt Patricia.",
             "Who coaches the Lions? Dan Campbell."]
    got = frame_updates(["a", "b", "c"], texts, [T1, T2, T3], {"c"})
    assert got == [Update("a", "b", T2), Update("b", "c", T3)]


def test_past_events_other_subjects_and_old_frames_are_left_alone() -> None:
    # going to Rome after Paris does not undo having gone to Paris
    assert frame_updates(["a", "b"], ["Ann went to Paris.", "Ann went to Rome."], [T1, T2], {"b"}) == []
    # preferences are many-valued
    assert frame_updates(["a", "b"], ["Ann loves Paris.", "Ann loves Rome."], [T1, T2], {"b"}) == []
    # another subject is another frame
    assert frame_updates(["a", "b"], ["Ann lives in Lisbon.", "Bob lives in Porto."], [T1, T2], {"b"}) == []
    # nothing new in the frame this run: nothing to decide
    assert frame_updates(["a", "b"], ["Ann lives in Lisbon.", "Ann lives in Porto."], [T1, T2], set()) == []
    # two values stated at the same moment are a contradiction for review, not an update
    assert frame_updates(["a", "b"], ["Ann lives in Lisbon.", "Ann lives in Porto."], [T1, T1], {"b"}) == []


def test_a_statement_said_again_after_another_value_starts_a_new_run() -> None:
    frame = "ann lives in ?"
    said = [("ann lives in lisbon", frame, T1), ("ann lives in lisbon", frame, T1),
            ("ann lives in porto", frame, T2), ("ann lives in lisbon", frame, T3),
            ("ann likes tea", "", T1), ("ann likes tea", "", T3)]  # no frame: one run
    assert restatement_runs(said) == [0, 0, 0, 1, 0, 0]
    # runs follow time, not the order the statements arrive in
    assert restatement_runs([said[3], said[2], said[0]]) == [1, 0, 0]
