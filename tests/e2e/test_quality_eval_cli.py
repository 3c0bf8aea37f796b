"""`python -m bench.quality.quality` end to end on tiny hand-written datasets (hash embedder): report, JSON and numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.errors import InvalidInput


def _write_data(root: Path) -> None:
    (root / "locomo").mkdir()
    turns1 = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso last week."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I went hiking in the Alps with my brother."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "Miso the cat sleeps on my keyboard all day."},
        {"speaker": "Bob", "dia_id": "D1:4", "text": "The Alps hike took three days and it snowed."},
    ]
    turns2 = [
        {"speaker": "Ann", "dia_id": "D2:1", "text": "I started a pottery class on Tuesdays."},
        {"speaker": "Bob", "dia_id": "D2:2", "text": "My brother and I plan another hike in Norway."},
        {"speaker": "Ann", "dia_id": "D2:3", "text": "The pottery class teacher is very patient."},
    ]
    locomo = [{
        "sample_id": "conv-t",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                         "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns1,
                         "session_2_date_time": "2:00 pm on 20 May, 2023", "session_2": turns2},
        "qa": [
            {"question": "What is the name of Ann's cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
            {"question": "When did Ann start pottery?", "answer": "May 2023", "evidence": ["D2:1"], "category": 2},
            {"question": "Where did Bob hike and where next?", "answer": "Alps, Norway",
             "evidence": ["D1:2; D2:2"], "category": 1},
            {"question": "What is the name of Bob's cat?", "evidence": ["D1:1"], "category": 5},
            {"question": "Ghost question?", "evidence": ["D9:9"], "category": 4},
        ],
        "observation": {"session_1_observation": {"Ann": [["Ann has a cat named Miso.", "D1:1"]],
                                                  "Bob": [["Bob hiked in the Alps.", "D1:2"]]}},
    }]
    (root / "locomo" / "locomo_dev.json").write_text(json.dumps(locomo))
    (root / "msrp").mkdir()
    msrp = ("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
            "1\t1\t2\tThe cat sat on the mat.\tThe cat sat on the mat.\n"
            "0\t3\t4\tStocks fell sharply.\tIt rained in Paris.\n"
            "1\t5\t6\tHe bought a red car.\tHe purchased a red car.\n"
            "0\t7\t8\tShe reads books.\tThe market opened late.\n")
    for name in ("msr-para-train.tsv", "msr-para-val.tsv"):
        (root / "msrp" / name).write_text(msrp)
    (root / "sick2014").mkdir()
    sick = ("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
            "1\tA man is playing a guitar\tA man is playing a guitar\t5.0\tENTAILMENT\n"
            "2\tA dog is running\tThere is no dog running\t3.5\tCONTRADICTION\n"
            "3\tA woman is cooking\tA child is swimming\t1.2\tNEUTRAL\n"
            "4\tA boy is jumping\tA boy is leaping\t4.6\tENTAILMENT\n")
    for name in ("SICK_train.txt", "SICK_trial.txt"):
        (root / "sick2014" / name).write_text(sick)
    (root / "nli").mkdir()
    (root / "nli" / "mnli_dev_matched_binary_42.csv").write_text(
        "sentence1,sentence2,label\nThe door is open.,The door is not open.,1\nHe runs daily.,He jogs every day.,0\n")
    (root / "situatedqa").mkdir()
    rows = [
        {"question": "who is the coach of the lions", "id": 7, "date": "2015", "date_type": "start", "answer": ["Jim"]},
        {"question": "who is the coach of the lions", "id": 7, "date": "2019", "date_type": "start", "answer": ["Matt"]},
        {"question": "who is the coach of the lions", "id": 7, "date": "2017", "date_type": "sampled_year",
         "answer": ["Jim"]},
    ]
    (root / "situatedqa" / "qa_data_temp.dev.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    chat = root / "beam" / "100K" / "1"
    chat.mkdir(parents=True)
    turns = [
        {"role": "user", "id": 0, "time_anchor": "March-15-2024", "content": "My Zotero library has 45 sources. ->-> 1,1"},
        {"role": "assistant", "id": 1, "content": "## Organising sources\n\n- Tag each source by theme.\n- Keep notes."},
        {"role": "user", "id": 2, "content": "I have never used Mendeley for my essay. ->-> 1,2"},
        {"role": "assistant", "id": 3, "content": "Noted, we will stay with Zotero."},
        {"role": "user", "id": 4, "content": "I added more and my Zotero library has 52 sources now. ->-> 1,3"},
        {"role": "assistant", "id": 5, "content": "Great progress on the library."},
    ]
    (chat / "chat.json").write_text(json.dumps([{"batch_number": 1, "time_anchor": "March-15-2024",
                                                 "turns": [turns[:2], turns[2:4], turns[4:]]}]))
    (chat / "probing_questions.json").write_text(json.dumps({
        "knowledge_update": [{"question": "How many sources are in my Zotero library?",
                              "source_chat_ids": {"original_info": [0], "updated_info": [4]}}],
        "information_extraction": [{"question": "Which reference manager have I never used?", "source_chat_ids": [2]}],
    }))
    (root / "spc").mkdir()
    conv = "User 1: I love to bake cookies.\nUser 2: I have two dogs.\nUser 1: Baking cookies is my passion."
    (root / "spc" / "Synthetic-Persona-Chat_valid.csv").write_text(
        "user 1 personas,user 2 personas,Best Generated Conversation\n"
        f'"I love to bake cookies.","I have two dogs.","{conv}"\n')


def test_eval_writes_report_and_json(settings, tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    _write_data(data)
    from bench.quality import quality

    quality.main(["--data", str(data), "--out", str(out), "--embedder", "hash"])
    report = (out / "QUALITY.md").read_text()
    stored = json.loads((out / "quality.json").read_text())
    for section in ("## 1. Retrieval", "## 2. Dedupe", "## 3. Contradiction", "## 4. Knowledge update",
                    "## 5. Extraction", "## 6. Agent transcripts", "## Thresholds"):
        assert section in report
    # BEAM: one chat of three turns by the user; the later count answers first after the night
    beam = stored["beam"]["groups"]["all"]
    assert beam["turns"] == 6 and beam["facts"]["facts"] >= 2 and beam["facts"].get("assistant_only", 0) == 0
    assert beam["night"]["current_first"] == 1.0 and 0 < beam["night"]["all"] <= 1
    assert stored["beam"]["never"]["turns"] == 7  # the never rule's false links counted on the LoCoMo file
    # the ghost question (evidence to no turn) is skipped; 4 questions asked
    assert stored["retrieval"]["questions"] == 4
    # identical MSRP/SICK pairs are merged at the default, unrelated ones are not: dev precision 1.0
    assert stored["dedupe"]["msrp"]["dev_at_default"]["precision"] == 1.0
    assert stored["dedupe"]["msrp"]["baseline_exact_hash"]["dev"]["tp"] == 1
    # "There is no dog running" vs "A dog is running": the negation rule fires on the SICK contradiction
    assert stored["contradiction"]["sick_dev"]["rule_only"]["tp"] == 1
    assert stored["knowledge_update"]["questions"] == 1
    assert stored["extraction"]["spc"]["gold"] == 2
    assert not list(out.glob("*.duckdb"))  # stores live in temp dirs, never next to the report
    # a full run replays the nights once per decay rate; the configured rate is the one the report's replay rows show
    sweep = stored["retrieval"]["nightly_decay_sweep"]
    from bench.quality.quality import DECAY_RATES

    assert [row["decay_rate"] for row in sweep] == sorted({*DECAY_RATES, settings.decay_rate})
    configured = next(row for row in sweep if row["decay_rate"] == stored["settings"]["decay_rate"])
    assert configured["recall_main_at_10"] == stored["retrieval"]["nightly"]["recall_main_categories"][9]
    assert stored["retrieval"]["nightly_decay_choice"]["preferred_rate"] in {row["decay_rate"] for row in sweep}
    assert "### Decay rate sweep (nightly replay)" in report
    assert "replay recall@10 (main) is highest at" in report


def test_quick_replays_the_configured_decay_rate_only(settings, tmp_path: Path) -> None:
    from bench.quality import quality

    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    _write_data(data)
    quality.main(["--data", str(data), "--out", str(out), "--embedder", "hash", "--quick", "--only", "retrieval"])
    stored = json.loads((out / "quality.json").read_text())
    assert [row["decay_rate"] for row in stored["retrieval"]["nightly_decay_sweep"]] == [settings.decay_rate]
    assert "replayed only the configured rate" in (out / "QUALITY.md").read_text()
    quality.main(["--data", str(data), "--out", str(out), "--embedder", "hash", "--quick", "--only", "retrieval",
                  "--decay-rates", "0.002"])
    stored = json.loads((out / "quality.json").read_text())
    rates = [row["decay_rate"] for row in stored["retrieval"]["nightly_decay_sweep"]]
    assert rates == sorted({0.002, settings.decay_rate})


def test_eval_with_the_fake_llm_extracts_and_resolves_through_it(settings, tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    _write_data(data)
    from bench.quality import quality

    quality.main(["--data", str(data), "--out", str(out), "--embedder", "hash", "--quick",
                  "--only", "retrieval", "knowledge_update", "--llm", "fake"])
    stored = json.loads((out / "quality.json").read_text())
    assert stored["llm"].startswith("fake/") and "--llm fake" in stored["command"]
    run = stored["retrieval"]["stage_counts"]["conv-t"]
    # two clusters, one batched request; every fact is the LLM's
    assert run["extract"]["clusters"] == 2 and run["extract"]["llm"]["requests"] == 1
    assert run["extract"]["llm_facts"] == run["extract"]["facts_created"] == 2
    assert "resolve" in run  # the resolve stage runs when an LLM is configured (nothing queued here)
    assert "deterministic fake" in (out / "QUALITY.md").read_text()
    with pytest.raises(SystemExit) as bad:
        quality.main(["--data", str(data), "--out", str(out), "--llm", "gpt"])
    assert bad.value.code == 2


def test_eval_missing_data_names_the_file(settings, tmp_path: Path) -> None:
    from bench.quality import quality

    with pytest.raises(InvalidInput, match="msr-para-train.tsv"):
        quality.main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"),
                      "--embedder", "hash", "--only", "dedupe"])
