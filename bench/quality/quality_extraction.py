"""Extraction evaluation: facts the nightly run extracts (no LLM) against gold persona facts and observations.

A 1:1 greedy matching by cosine >= MATCH_THRESHOLD pairs extracted facts with gold facts (precision:
matched facts / facts, recall: matched gold / gold; a duplicated fact matches once). Provenance
agreement: for matched pairs, the fact's extracted_from turns include a turn of the right speaker
(Synthetic-Persona-Chat) or one of the observation's evidence turns (LoCoMo). Baseline, same run and
same matching: every turn's best sentence stored as a fact (what "remember everything" gives).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality import metrics
from bench.quality.quality_data import by_sample, load_locomo_observations, load_spc
from bench.quality.quality_embed import CachedEmbedder
from bench.quality.quality_store import (
    Store,
    consolidate_tenant,
    cosine_matrix,
    fact_sources,
    fact_table,
    ingest,
    open_temp_store,
)
from engram.text.atomic import resolve_speaker, speaker_name
from engram.text.sentences import best_sentence

MATCH_THRESHOLD = 0.6
SWEEP = np.round(np.arange(0.40, 0.91, 0.05), 2)
_PREFIX = re.compile(r"^\s*User \d+\s*:\s*")


def _evaluate(embedder: CachedEmbedder, units: list[dict[str, Any]]) -> dict[str, Any]:
    """units: per tenant {pred: [text], gold: [text], agree: fn(pred_i, gold_j) -> bool, base: [text]}."""
    sweep: dict[float, dict[str, int]] = {float(t): {"m": 0, "p": 0, "g": 0, "bm": 0, "bp": 0} for t in SWEEP}
    agree_n = matched_n = 0
    for u in units:
        gold = embedder.embed(u["gold"])
        sim = cosine_matrix(embedder.embed(u["pred"]), gold)
        bsim = cosine_matrix(embedder.embed(u["base"]), gold)
        for t in SWEEP:
            s = sweep[float(t)]
            s["m"] += len(metrics.greedy_match(sim, t)) if sim.size else 0
            s["bm"] += len(metrics.greedy_match(bsim, t)) if bsim.size else 0
            s["p"] += len(u["pred"])
            s["bp"] += len(u["base"])
            s["g"] += len(u["gold"])
        for i, j, _ in (metrics.greedy_match(sim, MATCH_THRESHOLD) if sim.size else []):
            matched_n += 1
            agree_n += bool(u["agree"](i, j))

    def row(t: float, m: str, p: str) -> dict[str, float]:
        s = sweep[t]
        prec = s[m] / s[p] if s[p] else 0.0
        rec = s[m] / s["g"] if s["g"] else 0.0
        return {"threshold": t, "precision": prec, "recall": rec,
                "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}

    at = float(MATCH_THRESHOLD)
    return {
        "tenants": len(units), "facts": sweep[at]["p"], "gold": sweep[at]["g"], "baseline_facts": sweep[at]["bp"],
        "match_threshold": MATCH_THRESHOLD, "engram": row(at, "m", "p"), "baseline_every_turn": row(at, "bm", "bp"),
        "provenance_agreement": agree_n / matched_n if matched_n else float("nan"), "matched": matched_n,
        "sweep": [row(float(t), "m", "p") for t in SWEEP],
        "baseline_sweep": [row(float(t), "bm", "bp") for t in SWEEP],
    }


def run_spc(embedder: CachedEmbedder, path: Path, as_of: datetime, conversations: int, llm: str = "none"
            ) -> dict[str, Any]:
    """Synthetic-Persona-Chat: a tenant per conversation, gold = both users' persona facts."""
    chats = load_spc(path, limit=conversations)
    base = datetime(2024, 1, 1)
    records = [
        {"id": f"{c.id}:{n}", "user_id": c.id, "session_id": c.id, "kind": "turn", "role": speaker, "origin": "human",
         "content": text, "created_at": base + timedelta(seconds=n)}
        for c in chats for n, (speaker, text) in enumerate(c.turns)
    ]
    speaker_of = {r["id"]: r["role"] for r in records}
    store = open_temp_store("spc", embedder, llm)
    try:
        ingest(store, records, embedder)
        units = []
        for c in chats:
            consolidate_tenant(store, c.id, embedder, as_of)
            facts = [f for f in fact_table(store, c.id) if f["status"] == "active"]
            srcs = fact_sources(store, c.id, ("extracted_from",))
            gold = [(who, g) for who, items in c.personas.items() for g in items]
            src_speakers = [{speaker_of[e] for e in srcs.get(f["id"], ())} for f in facts]
            units.append({
                # a gold persona fact is said in the first person by its user; a fact names its speaker
                # ("User 1 likes X"): gold is put in the same form by the same function before matching
                "pred": [_PREFIX.sub("", f["text"]) for f in facts],
                "gold": [resolve_speaker(g, speaker_name(who)) for who, g in gold],
                "base": [resolve_speaker(best_sentence(t), speaker_name(sp)) for sp, t in c.turns],
                "agree": lambda i, j, s=src_speakers, g=gold: g[j][0] in s[i],
            })
        return _evaluate(embedder, units)
    finally:
        store.close()


def run_locomo(embedder: CachedEmbedder, store: Store, data: Path, users: list[str]) -> dict[str, Any]:
    """LoCoMo observations against the facts already consolidated in the retrieval store."""
    from engram.store.locomo import locomo_records

    obs = by_sample(load_locomo_observations(data))
    turns: dict[str, list[dict[str, Any]]] = {}
    for r in locomo_records(data):
        turns.setdefault(r["user_id"], []).append(r)
    units = []
    for u in users:
        gold = obs.get(u, [])
        facts = [f for f in fact_table(store, u) if f["status"] == "active"]
        srcs = fact_sources(store, u, ("extracted_from",))
        src_turns = [{e.split(":", 1)[1] for e in srcs.get(f["id"], ())} for f in facts]
        units.append({
            "pred": [f["text"] for f in facts], "gold": [o.text for o in gold],
            "base": [f"{r['role']}: {best_sentence(r['content'])}" for r in turns.get(u, [])],
            "agree": lambda i, j, s=src_turns, g=gold: bool(s[i] & set(g[j].evidence)),
        })
    return _evaluate(embedder, units)
