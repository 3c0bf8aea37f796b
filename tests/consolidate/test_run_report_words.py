"""The operator's run report: what changed in words, commands to see more, clean cells, a capped artifact."""

from __future__ import annotations

from datetime import datetime

import pytest

from engram.consolidate.report import (
    capped_rows,
    change_rows,
    changes_markdown,
    run_report_markdown,
)

RUN = "run-20261120T030000-abc"


def change(fact_id: str, action: str, before: float | None, after: float, status_before: str | None,
           status_after: str, text: str, **extra: str) -> dict:
    return {"fact_id": fact_id, "text": text, "action": action, "confidence_before": before,
            "confidence_after": after, "status_before": status_before, "status_after": status_after,
            "related_fact_id": None, "reason": "why", "related_text": None, **extra}


RESULTS = {"alice": {
    "confidence": {"contradictions": 2, "seconds": 0.1},
    "merge": {"queued": 1, "seconds": 0.1},
    "resolve": {"requests": 1, "failed": 1, "seconds": 0.1},
    "deprecate": {"deprecated": 1, "seconds": 0.1},
    "publish": {"seconds": 0.1, "changes": [
        change("f_new", "created", None, 0.5, None, "active", "The user moved to Lisbon."),
        change("f_old", "superseded", 0.5, 0.5, "active", "superseded", "The user lives in Berlin.",
               related_fact_id="f_new", related_text="The user moved to Lisbon."),
        change("f_spicy", "contradicted", 0.5, 0.25, "active", "active", "The user likes spicy food."),
        change("f_dep", "deprecated", 0.25, 0.25, "active", "deprecated", "The user likes tea."),
    ]},
}}


def test_report_says_what_changed_in_words_with_commands() -> None:
    md = run_report_markdown(RUN, datetime(2026, 11, 20, 3), False, RESULTS)
    assert ("What changed: 1 new fact; 1 update; 1 fact contradicted; 1 fact deprecated; "
            "2 contradictions queued for review; 1 merge queued for review; 1 review decision failed.") in md
    assert '- updated: "The user lives in Berlin." -> "The user moved to Lisbon."' in md
    assert "- decide the queued reviews: engram review list --user alice" in md
    assert (f"- every change: engram sql \"select * from fact_history where run_id = '{RUN}' "
            "and user_id = 'alice' order by user_id, fact_id, seq\"") in md
    assert "engram explain FACT_ID --user alice" in md


def test_report_names_a_failed_stage_and_a_quiet_night() -> None:
    md = run_report_markdown(RUN, datetime(2026, 11, 20, 3), False, {
        "bob": {"extract": {"failed": "LLMError: quota", "seconds": 0.0}},
        "carol": {"publish": {"changes": [], "seconds": 0.1}},
    })
    assert "What changed: 1 stage failed." in md and "- failed: extract: LLMError: quota" in md
    assert "What changed: nothing." in md


def test_change_cells_never_start_with_a_dash() -> None:
    rows = {r["fact"]: r for r in change_rows(RESULTS)}
    assert (rows["f_new"]["confidence"], rows["f_new"]["status"]) == ("0.500", "active")  # was "- -> 0.500"
    assert (rows["f_spicy"]["confidence"], rows["f_spicy"]["status"]) == ("0.500 -> 0.250", "active")
    assert rows["f_old"]["status"] == "active -> superseded"
    assert list(rows["f_new"])[:2] == ["event", "text"]  # what an operator reads first fits a narrow window
    assert not any(cell.startswith("-") for r in rows.values() for cell in r.values())


def test_changes_table_in_the_terminal_names_the_run() -> None:
    many = {"alice": {"publish": {"changes": [change(f"f{i}", "created", None, 0.5, None, "active", "t")
                                              for i in range(60)]}}}
    md = changes_markdown(many, run_id=RUN)
    assert f"10 more change(s): engram sql \"select * from fact_history where run_id = '{RUN}'" in md
    assert "..." not in md


def test_artifact_rows_are_capped_with_a_count_and_a_command() -> None:
    night = {"alice": {"publish": {"changes": [change(f"f{i}", "created", None, 0.5, None, "active", "t")
                                               for i in range(5294)]}}}
    rows = capped_rows(change_rows(night), RUN)
    assert len(rows) == 201
    assert rows[-1]["event"] == "+5094 more"
    assert rows[-1]["text"].startswith(f"5094 more change(s): engram sql \"select * from fact_history where run_id = '{RUN}'")
    assert capped_rows(rows[:3], RUN) == rows[:3]


def test_published_table_artifact_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    from engram.flows import artifacts

    tables: list[list[dict]] = []
    monkeypatch.setattr(artifacts, "create_markdown_artifact", lambda **kw: None)
    monkeypatch.setattr(artifacts, "create_table_artifact", lambda **kw: tables.append(kw["table"]))
    night = {"alice": {"publish": {"changes": [change(f"f{i}", "created", None, 0.5, None, "active", "t")
                                               for i in range(5294)]}}}
    artifacts.publish_run_artifacts(RUN, datetime(2026, 11, 20, 3), False, night)
    assert len(tables) == 1 and len(tables[0]) == 201
