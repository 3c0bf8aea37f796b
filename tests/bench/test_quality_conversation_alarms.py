"""The contradiction evaluation's false-alarm count on a hand-made conversation (hash embedder)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.quality.quality_contradiction import (
    ALARM_BUDGET_PER_1000_TURNS,
    ALARM_THRESHOLDS,
    conversation_alarms,
    rule_score,
)
from bench.quality.quality_embed import CachedEmbedder
from engram.embed.models import HashEmbedder

TURNS = [
    ("Ann", "I love my garden and the roses in it"),
    ("Ann", "I do not love my garden and the roses in it"),  # the one contradiction
    ("Bob", "The train to Oslo leaves at nine tomorrow"),
    ("Ann", "I can't wait for the concert on Friday"),  # an idiom, not a negation
    ("Ann", "The concert on Friday will be great"),
]


def _locomo(path: Path) -> Path:
    turns = [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(TURNS)]
    path.write_text(json.dumps([{
        "sample_id": "conv-a", "qa": [],
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023",
                         "session_1": turns},
    }]))
    return path


def test_counts_each_firing_pair_once_per_threshold(tmp_path: Path) -> None:
    emb = CachedEmbedder(HashEmbedder(384))
    out = conversation_alarms(emb, _locomo(tmp_path / "locomo.json"))
    a, b = emb.embed([f"Ann: {TURNS[0][1]}", f"Ann: {TURNS[1][1]}"])
    cos = float(a @ b)
    assert cos > ALARM_THRESHOLDS[0]
    assert out["turns"] == len(TURNS) and out["reasons"] == {"negation": 1}
    rates = out["alarms_per_1000_turns"]
    # the rule's score: the cosine, or 1.0 when the pair shares two thirds of its content words (as here:
    # the negation is the only difference), which fires at every threshold
    why, score = rule_score(f"Ann: {TURNS[0][1]}", f"Ann: {TURNS[1][1]}", cos)
    assert why == "negation"
    for t in ALARM_THRESHOLDS:
        want = 1000 / len(TURNS) if score > t else 0.0
        assert rates[f"{t:.2f}"] == want, t
    # one alarm in five turns is over the budget, so the lowest threshold within it is the first above the score
    assert 1000 / len(TURNS) > ALARM_BUDGET_PER_1000_TURNS
    within = ALARM_THRESHOLDS[ALARM_THRESHOLDS >= score]
    assert out["lowest_threshold_within_budget"] == (float(within[0]) if len(within) else None)
