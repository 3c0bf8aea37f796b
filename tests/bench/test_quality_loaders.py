"""The quality evaluation's dataset loaders on tiny hand-written files."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from bench.quality.quality_data import (
    answer_at,
    load_locomo_observations,
    load_msrp,
    load_nli_binary,
    load_sick,
    load_situatedqa,
    load_spc,
    parse_date,
)
from engram.errors import InvalidInput


def test_msrp_with_bom_crlf_and_raw_quotes(tmp_path: Path) -> None:
    path = tmp_path / "msrp.tsv"
    path.write_bytes(
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
        "1\t1\t2\tHe said \"yes\" today.\tToday he said \"yes\".\r\n"
        "0\t3\t4\tStocks fell.\tIt rained.\r\n"
        "1\t5\n".encode()  # a truncated row is skipped
    )
    pairs = load_msrp(path)
    assert [(p.a, p.b, p.label) for p in pairs] == [
        ('He said "yes" today.', 'Today he said "yes".', True), ("Stocks fell.", "It rained.", False)]


def test_msrp_without_the_label_column_names_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text("#1 String\t#2 String\na\tb\n")
    with pytest.raises(InvalidInput, match="Quality"):
        load_msrp(path)


def test_sick(tmp_path: Path) -> None:
    path = tmp_path / "sick.txt"
    path.write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
                    "1\tA man plays\tA man is playing\t4.9\tENTAILMENT\n"
                    "2\tA dog runs\tNo dog runs\t3.6\tCONTRADICTION\n")
    a, b = load_sick(path)
    assert (a.label, a.relatedness, a.judgment) == (True, 4.9, "ENTAILMENT")
    assert (b.label, b.relatedness, b.judgment, b.b) == (False, 3.6, "CONTRADICTION", "No dog runs")


def test_nli_binary_with_quoted_commas(tmp_path: Path) -> None:
    path = tmp_path / "nli.csv"
    path.write_text('sentence1,sentence2,label\n"It is big, really.",It is small.,1\nA,B,0\n')
    pairs = load_nli_binary(path)
    assert [(p.a, p.label) for p in pairs] == [("It is big, really.", True), ("A", False)]


def test_parse_date_formats() -> None:
    assert parse_date("2021") == datetime(2021, 1, 1)
    assert parse_date("January 27, 2021") == datetime(2021, 1, 27)
    assert parse_date("February 07, 2021") == datetime(2021, 2, 7)
    assert parse_date("sometime") is None


def test_situatedqa_keeps_changed_answers_and_scored_probes(tmp_path: Path) -> None:
    rows = [
        {"question": "who won", "id": 1, "date": "2018", "date_type": "start", "answer": ["B"]},
        {"question": "who won", "id": 1, "date": "2010", "date_type": "start", "answer": ["A"]},
        {"question": "who won", "id": 1, "date": "2015", "date_type": "sampled_year", "answer": ["A"]},
        {"question": "who won", "id": 1, "date": "2001", "date_type": "sampled_year", "answer": ["Z"]},  # before starts
        {"question": "who won", "id": 1, "date": "May 03, 2020", "date_type": "sampled_date", "answer": ["B"]},
        {"question": "same", "id": 2, "date": "2010", "date_type": "start", "answer": ["X"]},
        {"question": "same", "id": 2, "date": "2012", "date_type": "start", "answer": ["X"]},  # never changed
    ]
    path = tmp_path / "sqa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (q,) = load_situatedqa(path)
    assert q.id == "1"
    assert q.starts == [(datetime(2010, 1, 1), "A"), (datetime(2018, 1, 1), "B")]
    assert q.current == "B"
    assert q.probes == [(datetime(2015, 1, 1), "A"), (datetime(2020, 5, 3), "B")]
    assert answer_at(q, datetime(2017, 12, 31)) == "A"
    assert answer_at(q, datetime(2018, 1, 1)) == "B"


def test_situatedqa_bad_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "q", "id": 1, "date": "2000", "date_type": "start", "answer": ["a"]}\nnot json\n')
    with pytest.raises(InvalidInput, match="line 2"):
        load_situatedqa(path)


def test_spc_turns_personas_and_seeded_sample(tmp_path: Path) -> None:
    path = tmp_path / "spc.csv"
    conv = "User 1: Hi!\nUser 2: I love dogs.\nthey are great\nUser 1: I bake."
    body = "".join(f'"I bake.\nI knit.","I love dogs.","{conv}"\n' for _ in range(5))
    path.write_text("user 1 personas,user 2 personas,Best Generated Conversation\n" + body)
    chats = load_spc(path)
    assert len(chats) == 5
    c = chats[0]
    assert c.turns == [("User 1", "Hi!"), ("User 2", "I love dogs. they are great"), ("User 1", "I bake.")]
    assert c.personas == {"User 1": ["I bake.", "I knit."], "User 2": ["I love dogs."]}
    first = [x.id for x in load_spc(path, limit=2)]
    assert first == [x.id for x in load_spc(path, limit=2)]  # same sample every run
    assert len(first) == 2


def test_locomo_observations_normalise_evidence(tmp_path: Path) -> None:
    data = [{"sample_id": "conv-1", "conversation": {}, "qa": [], "observation": {
        "session_1_observation": {
            "Ann": [["Ann likes tea.", "D1:3"], ["Ann has a cat.", ["D:1:5", "D1:06"]]],
            "Bob": [["Bob runs.", "D1:4; D2:7"]],
        }}}]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    obs = load_locomo_observations(path)
    assert [(o.speaker, o.text, o.evidence) for o in obs] == [
        ("Ann", "Ann likes tea.", ("D1:3",)), ("Ann", "Ann has a cat.", ("D1:5", "D1:6")),
        ("Bob", "Bob runs.", ("D1:4", "D2:7"))]
