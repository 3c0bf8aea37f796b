"""Retrieval evaluation on LoCoMo: evidence recall@k before consolidation (episodes) and after (facts).

Each conversation is a tenant. Before: hybrid search over episodes (and the plain BM25 baseline of
bench/quality/locomo.py). After the nightly stages (no LLM): hybrid search over facts, where a fact hits an
evidence turn when its provenance (extracted_from or supports) contains the turn, and over both
tables. Adversarial questions (category 5) are also an abstention test: does the top hit's cosine
separate them from answerable questions (ROC-AUC)?
The nightly replay (one run per session night) is repeated for each decay rate of a sweep.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality import metrics
from bench.quality.locomo import CATEGORIES, evidence_ids, plain_tokens
from bench.quality.quality_embed import CachedEmbedder
from bench.quality.quality_store import (
    Store,
    consolidate_tenant,
    fact_sources,
    fact_table,
    ingest,
    open_temp_store,
)
from engram.decay import decayed
from engram.index.bm25 import BM25
from engram.query.search import search_memory
from engram.store import db
from engram.store.locomo import locomo_records

KMAX = 10
METHODS = ("baseline-bm25", "episodes", "facts", "both")
# The replay recall@10 engram gives up for forgetting: the largest rate within this much of the best is
# preferred. LoCoMo has no question an old, unreinforced fact answers wrongly, so the replay measures what
# decay costs and never what it buys; a tolerance of 0 would choose never to forget.
DECAY_TOLERANCE = 0.025


def _turn(episode_id: str) -> str:
    return episode_id.split(":", 1)[1]


def questions(path: Path, known: dict[str, set[str]], max_questions: int | None) -> list[dict[str, Any]]:
    """LoCoMo questions with at least one evidence turn that exists (evidence ids normalised)."""
    out = []
    for sample in json.loads(Path(path).read_text(encoding="utf-8")):
        user = str(sample["sample_id"])
        if user not in known:
            continue
        for qa in sample["qa"]:
            gold = [e for e in evidence_ids(qa.get("evidence", [])) if e in known[user]]
            if gold:
                out.append({"user": user, "question": qa["question"], "category": int(qa["category"]), "gold": gold})
    if max_questions is not None:
        # a stride keeps every conversation and category represented in a small sample
        step = max(-(-len(out) // max_questions), 1)
        out = out[::step][:max_questions]
    return out


def _recalls(covers: list[set[str]], gold: list[str]) -> list[float]:
    return [metrics.covered_recall_at_k(covers, gold, k) if covers else 0.0 for k in range(1, KMAX + 1)]


def run(embedder: CachedEmbedder, data: Path, as_of: datetime, max_questions: int | None = None,
        max_conversations: int | None = None, nightly: bool = True, decay_rates: tuple[float, ...] = (),
        llm: str = "none") -> tuple[dict[str, Any], Store]:
    """Recall@1..10 per method and category, consolidation counts; returns the store (caller closes it).

    The nightly replay runs at the configured decay_rate (result["nightly"]) and at each of decay_rates
    (result["nightly_decay_sweep"], the configured rate included).
    """
    records = locomo_records(data)
    users = sorted({r["user_id"] for r in records})
    if max_conversations is not None:
        users = users[:max_conversations]
        records = [r for r in records if r["user_id"] in users]
    by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_user[r["user_id"]].append(r)
    store = open_temp_store("locomo", embedder, llm)
    t0 = time.perf_counter()
    ingest(store, records, embedder)
    timings = {"ingest_s": time.perf_counter() - t0}
    qs = questions(data, {u: {_turn(r["id"]) for r in rs} for u, rs in by_user.items()}, max_questions)
    embedder.embed([q["question"] for q in qs])
    baseline = {u: BM25([plain_tokens(f"{r['role']}: {r['content']}") for r in rs]) for u, rs in by_user.items()}
    rec: dict[str, list[list[float]]] = {m: [] for m in METHODS}
    top_sim: dict[str, list[float]] = {"episodes": [], "facts": [], "baseline-bm25": []}
    t0 = time.perf_counter()
    with db.open_reader(store.settings) as con:
        for q in qs:
            scores = baseline[q["user"]].score(plain_tokens(q["question"]))
            order = [i for i in np.argsort(-scores, kind="stable")[:KMAX] if scores[i] > 0]
            rec["baseline-bm25"].append(_recalls([{_turn(by_user[q["user"]][i]["id"])} for i in order], q["gold"]))
            top_sim["baseline-bm25"].append(float(scores.max()) if len(scores) else 0.0)
            hits = search_memory(q["question"], "episodes", KMAX, q["user"], settings=store.settings, con=con,
                                 embedder=embedder)
            rec["episodes"].append(_recalls([{_turn(h.id)} for h in hits], q["gold"]))
            top_sim["episodes"].append(max((h.similarity or 0.0 for h in hits), default=0.0))
    timings["search_before_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    runs: dict[str, Any] = {}
    for u in users:
        runs[u] = consolidate_tenant(store, u, embedder, as_of)
    timings["consolidate_s"] = time.perf_counter() - t0
    sources = {u: fact_sources(store, u) for u in users}
    facts = {u: fact_table(store, u) for u in users}
    t0 = time.perf_counter()
    with db.open_reader(store.settings) as con:
        for q in qs:
            src = sources[q["user"]]
            for method, table in (("facts", "facts"), ("both", "both")):
                hits = search_memory(q["question"], table, KMAX, q["user"], settings=store.settings, con=con,
                                     embedder=embedder)
                # a fact unit covers its provenance and the episodes folded under it in the result
                covers = [{_turn(e) for e in src.get(h.id, ())} | {_turn(x["id"]) for x in h.sources}
                          if h.table == "facts" else {_turn(h.id)} for h in hits]
                rec[method].append(_recalls(covers, q["gold"]))
                if method == "facts":
                    top_sim["facts"].append(max((h.similarity or 0.0 for h in hits), default=0.0))
    timings["search_after_s"] = time.perf_counter() - t0
    result = _summarise(qs, rec, top_sim, runs, facts, sources, by_user, timings)
    if nightly:
        default = store.settings.decay_rate
        sweep = []
        for rate in sorted({default, *decay_rates}):
            t0 = time.perf_counter()
            n = replay(embedder, records, by_user, qs, llm=llm, decay_rate=rate)
            sweep.append(sweep_row(n, time.perf_counter() - t0))
            if rate == default:
                result["nightly"] = n
                timings["nightly_replay_s"] = sweep[-1]["replay_s"]
        last = {u: max(int(r["metadata"]["session"]) for r in rs) for u, rs in by_user.items()}
        early = [int(g[1:].split(":")[0]) <= last[q["user"]] / 2 for q in qs for g in q["gold"]]
        result["nightly"]["evidence_in_first_half_of_sessions"] = float(np.mean(early)) if early else None
        result["nightly_decay_sweep"] = sweep
        result["nightly_decay_choice"] = decay_choice(sweep, default)
        timings["nightly_decay_sweep_s"] = sum(row["replay_s"] for row in sweep)
    return result, store


def replay(embedder: CachedEmbedder, records: list[dict[str, Any]], by_user: dict[str, list[dict[str, Any]]],
           qs: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    """The nightly flow as it would have run: one run the night after each session, queried after the last.

    Confidence decays between sessions (weeks to months apart), later sessions reinforce, contradict or
    merge into earlier facts, and facts below deprecate_below leave retrieval: the real lifecycle.
    overrides are settings of the replay's store (e.g. decay_rate).
    """
    store = open_temp_store("locomo-nightly", embedder, **overrides)
    try:
        ingest(store, records, embedder)
        end: dict[str, datetime] = {}
        created: list[float] = []
        runs = 0
        for u, rs in by_user.items():
            nights = sorted({r["created_at"].date() for r in rs})
            for n, day in enumerate(nights):
                as_of = datetime.combine(day, datetime.min.time()) + timedelta(days=1)
                counts = consolidate_tenant(store, u, embedder, as_of, run_id=f"night-{n}")
                created += counts["confidence_after_extract"]
                runs += 1
            end[u] = as_of
        rate, floor = store.settings.decay_rate, store.settings.deprecate_below
        final: list[float] = []
        statuses: dict[str, int] = defaultdict(int)
        sources = {u: fact_sources(store, u) for u in by_user}
        for u in by_user:
            for f in fact_table(store, u):
                statuses[f["status"]] += 1
                if f["status"] == "active":
                    final.append(decayed(f["confidence"], f["confidence_at"], end[u], rate))
        rec: list[list[float]] = []
        with db.open_reader(store.settings) as con:
            for q in qs:
                hits = search_memory(q["question"], "facts", KMAX, q["user"], as_of=end[q["user"]],
                                     settings=store.settings, con=con, embedder=embedder)
                rec.append(_recalls([{_turn(e) for e in sources[q["user"]].get(h.id, ())} for h in hits], q["gold"]))
        cats = np.array([q["category"] for q in qs])
        main = np.isin(cats, [1, 2, 4])
        return {
            "decay_rate": rate, "deprecate_below": floor,
            "runs": runs, "statuses": dict(statuses), "confidence_at_creation": created,
            "confidence_active_at_end": final,
            "active_below_deprecate_floor_at_end": int(sum(c <= floor for c in final)),
            "recall_main_categories": np.mean(np.array(rec)[main], axis=0).tolist() if main.any() else None,
            "recall_curves": {CATEGORIES[c]: np.mean(np.array(rec)[cats == c], axis=0).tolist() if (cats == c).any()
                              else None for c in CATEGORIES},
        }
    finally:
        store.close()


def sweep_row(nightly: dict[str, Any], seconds: float) -> dict[str, Any]:
    """One decay rate's replay in a few numbers: recall@1/5/10 (main categories), statuses, confidence."""
    main, active = nightly["recall_main_categories"], nightly["confidence_active_at_end"]
    return {
        "decay_rate": nightly["decay_rate"],
        **{f"recall_main_at_{k}": main[k - 1] if main else None for k in (1, 5, 10)},
        "statuses": nightly["statuses"], "facts": sum(nightly["statuses"].values()),
        "deprecated": nightly["statuses"].get("deprecated", 0), "active": len(active),
        "median_effective_confidence_active": float(np.median(active)) if active else None,
        "active_below_deprecate_floor_at_end": nightly["active_below_deprecate_floor_at_end"],
        "replay_s": seconds,
    }


def decay_choice(sweep: list[dict[str, Any]], default: float, tolerance: float = DECAY_TOLERANCE
                 ) -> dict[str, Any]:
    """The rate with the best replay recall@10 (main), and the largest rate within tolerance of it.

    The largest is preferred: a memory should still forget facts that are never reinforced, so when
    recall is flat below some rate the data does not ask for less decay than that.
    """
    scored = [r for r in sweep if r["recall_main_at_10"] is not None]
    if not scored:
        return {"default_rate": default, "best_rate": None, "best_recall_at_10": None, "preferred_rate": None,
                "preferred_recall_at_10": None, "default_recall_at_10": None, "tolerance": tolerance}
    best = max(scored, key=lambda r: (r["recall_main_at_10"], -r["decay_rate"]))
    near = [r for r in scored if r["recall_main_at_10"] >= best["recall_main_at_10"] - tolerance - 1e-12]
    preferred = max(near, key=lambda r: r["decay_rate"])
    at_default = next((r for r in scored if r["decay_rate"] == default), None)
    return {"default_rate": default, "best_rate": best["decay_rate"], "best_recall_at_10": best["recall_main_at_10"],
            "preferred_rate": preferred["decay_rate"], "preferred_recall_at_10": preferred["recall_main_at_10"],
            "default_recall_at_10": at_default["recall_main_at_10"] if at_default else None, "tolerance": tolerance}


def _summarise(qs: list[dict[str, Any]], rec: dict[str, list[list[float]]], top_sim: dict[str, list[float]],
               runs: dict[str, Any], facts: dict[str, list[dict[str, Any]]], sources: dict[str, dict[str, set[str]]],
               by_user: dict[str, list[dict[str, Any]]], timings: dict[str, float]) -> dict[str, Any]:
    cats = np.array([q["category"] for q in qs])
    curves = {m: {CATEGORIES[c]: np.mean(np.array(rec[m])[cats == c], axis=0).tolist() if (cats == c).any() else None
                  for c in CATEGORIES} for m in METHODS}
    main = [1, 2, 4]
    overall = {m: np.mean(np.array(rec[m])[np.isin(cats, main)], axis=0).tolist() if np.isin(cats, main).any() else None
               for m in METHODS}
    active = {u: [f for f in fs if f["status"] == "active"] for u, fs in facts.items()}
    turns = sum(len(rs) for rs in by_user.values())
    covered = sum(len({e for f in active[u] for e in sources[u].get(f["id"], ())}) for u in active)
    n_src = [len(sources[u].get(f["id"], ())) for u in active for f in active[u]]
    adv = cats == 5
    abstention: dict[str, Any] = {"adversarial": int(adv.sum()), "answerable": int((~adv).sum())}
    if adv.any() and (~adv).any():
        for m, sims in top_sim.items():
            # low top similarity should flag the unanswerable question: score = -similarity
            abstention[f"roc_auc_{m}"] = metrics.roc_auc_or_nan(-np.array(sims), adv)
            abstention[f"mean_top_{m}_adversarial"] = float(np.mean(np.array(sims)[adv]))
            abstention[f"mean_top_{m}_answerable"] = float(np.mean(np.array(sims)[~adv]))
    status_counts: dict[str, int] = defaultdict(int)
    for fs in facts.values():
        for f in fs:
            status_counts[f["status"]] += 1
    return {
        "questions": len(qs), "per_category": {CATEGORIES[c]: int((cats == c).sum()) for c in CATEGORIES},
        "turns": turns, "conversations": len(by_user), "recall_curves": curves, "recall_main_categories": overall,
        "facts": {"statuses": dict(status_counts), "active": sum(len(v) for v in active.values()),
                  "turns_covered_by_active_facts": covered, "turn_coverage": covered / turns if turns else 0.0,
                  "mean_sources_per_active_fact": float(np.mean(n_src)) if n_src else 0.0},
        "stage_counts": {u: {k: v for k, v in r.items() if k != "confidence_after_extract"} for u, r in runs.items()},
        "confidence_after_extract": [c for r in runs.values() for c in r["confidence_after_extract"]],
        "confidence_after_run": [f["confidence"] for fs in facts.values() for f in fs],
        "abstention": abstention, "timings": timings,
    }
