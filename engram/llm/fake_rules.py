"""A deterministic responder for ENGRAM_LLM=fake: simple rules per schema, so the pipeline runs offline.

It reads the prompt's data block like a model would and answers every case or cluster:
contradictions keep the more recently asserted fact (keep_both on a tie), merges keep the most
confident fact, extraction states each cluster's first user episode as one fact, why's support pick covers every path.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from engram.llm.prompt_quote import read_data_block

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_TYPES = (
    ("goal", ("want to", "plan to", "going to", "hope to", "goal", "would like to")),
    ("preference", ("prefer", "like", "love", "hate", "favorite", "favourite", "enjoy", "dislike")),
    ("assumption", ("think", "maybe", "probably", "guess", "believe", "might")),
)


def _claim_type(text: str) -> str:
    low = text.lower()
    return next((kind for kind, words in _TYPES if any(w in low for w in words)), "fact")


def _contradictions(records: list[dict[str, Any]]) -> dict[str, Any]:
    decisions = []
    for r in records:
        a, b = r["a"], r["b"]
        if a["asserted_at"] == b["asserted_at"]:
            action, why = "keep_both", "stated at the same time; no basis to drop either"
        elif a["asserted_at"] > b["asserted_at"]:
            action, why = "keep_a", "a was stated more recently"
        else:
            action, why = "keep_b", "b was stated more recently"
        decisions.append({"case": r["case"], "action": action, "reason": why})
    return {"decisions": decisions}


def _merges(records: list[dict[str, Any]]) -> dict[str, Any]:
    decisions = []
    for r in records:
        best = max(r["facts"], key=lambda f: (f["confidence"], f["evidence"], len(f["text"]), f["id"]))
        decisions.append({"case": r["case"], "action": "merge", "winner": best["id"],
                          "reason": "same statement; kept the most confident wording"})
    return {"decisions": decisions}


def _extraction(records: list[dict[str, Any]]) -> dict[str, Any]:
    clusters = []
    for r in records:
        eps = r["episodes"]
        first = next((e for e in eps if e["role"] == "user"), eps[0])
        sentence = _SENTENCE.split(first["text"].strip())[0][:300]
        facts = [{"text": sentence, "claim_type": _claim_type(sentence), "category": "general",
                  "episodes": [e["id"] for e in eps]}] if sentence else []
        clusters.append({"cluster": r["cluster"], "facts": facts})
    return {"clusters": clusters}


def _support_pick(records: list[dict[str, Any]]) -> dict[str, Any]:
    """why's support set: for each path not yet hit, its claim on the most paths (then most confident)."""
    confidence = {r["claim_id"]: r["confidence"] for r in records if "text" in r}
    paths = [r["claim_ids"] for r in records if "path" in r]
    on_paths = {c: sum(c in p for p in paths) for c in confidence}
    chosen: list[str] = []
    for path in paths:
        if path and not set(path) & set(chosen):
            chosen.append(min(path, key=lambda c: (-on_paths.get(c, 0), -confidence.get(c, 0.0), c)))
    return {"claim_ids": chosen}


RULES = {"ContradictionReply": _contradictions, "MergeReply": _merges, "ExtractionReply": _extraction,
         "SupportPick": _support_pick}


def rule_based_responder(prompt: str, schema: type[BaseModel]) -> str:
    """Answer a prompt built by engram.consolidate.resolve / engram.consolidate.llm_extract with JSON for `schema`."""
    rule = RULES.get(schema.__name__)
    if rule is None:
        raise ValueError(f"schema: the fake LLM has no rule for {schema.__name__}")
    return json.dumps(rule(read_data_block(prompt)))
