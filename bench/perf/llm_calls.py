"""LLM requests and tokens: the nightly batched pipeline vs a write-time design (two calls per add).

    python -m bench.perf.llm_calls                       # 1,000 memories, 4 tenants, 10 nights, minilm
    python -m bench.perf.llm_calls --memories 5000 --nights 30 --embedder hash
    python -m bench.perf.llm_calls --embedder hash --json OUT   # also the per-mode figures as JSON

Synthetic memories come from templates: restatements of a tenant's facts (duplicates), later
contradictions of some of them, and one-off events. No network: a counting fake LLM answers
(the rule-based responder) and tokens are estimated the same way (characters / 4) for both designs.

Nightly: each night's episodes are ingested, then the real stages run (embed, extract, confidence,
merge); the clusters the extract stage found go to engram.consolidate.llm_extract in batched requests, and
the queued reviews go to engram.consolidate.resolve in batched requests.
Both LLM modes are also run through the product path: ENGRAM_LLM_MODE=interactive (the extract stage
sends its HDBSCAN clusters to the LLM, the resolve stage its queued reviews, while the run waits) and
ENGRAM_LLM_MODE=batch (the same work as one Batch API job per night, collected by the next night,
billed at the batch price); the fake answers both.
Write-time (the mem0 paper's design): every add makes one extraction call (the new message with the
previous 10 messages as context) and one update call (each extracted fact with the 10 most similar
stored memories), both built with the same prompt builders as the nightly path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from engram import embed
from engram.consolidate.batch import collect_batches, submit_batch
from engram.consolidate.context import StageContext
from engram.consolidate.llm_extract import ClusterInput, ExtractionReply, extract_facts
from engram.consolidate.llm_extract import build_prompt as extraction_prompt
from engram.consolidate.resolve import resolve_pending
from engram.consolidate.review_prompts import MergeReply
from engram.consolidate.review_prompts import build_prompt as review_prompt
from engram.consolidate.runner import Tools, run_stage
from engram.llm.base import BATCH_PRICE_FACTOR
from engram.llm.fake import FakeBatch, FakeLLM
from engram.llm.fake_rules import rule_based_responder
from engram.llm.gemini import estimate_cost
from engram.settings import load_settings
from engram.store import db
from engram.store.ingest import add_episodes

REPORT = Path(__file__).resolve().parent / "LLM_CALLS.md"
START = datetime(2026, 10, 1, 8, 0)
NAMES = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana"]

# (statement variants, contradiction) per base fact; {n} is the tenant's name
FACTS: list[tuple[list[str], str]] = [
    (["{n} drinks black coffee every morning", "{n} has a black coffee each morning",
      "Every morning {n} drinks coffee, black"], "{n} never drinks coffee anymore"),
    (["{n} lives in Berlin", "{n} has lived in Berlin for years", "{n}'s home is in Berlin"],
     "{n} no longer lives in Berlin"),
    (["{n} works as a nurse at St Mary's hospital", "{n} is a nurse at St Mary's",
      "{n}'s job is nursing at St Mary's hospital"], "{n} does not work at St Mary's hospital"),
    (["{n} is allergic to peanuts", "{n} has a peanut allergy", "Peanuts give {n} an allergic reaction"],
     "{n} is not allergic to peanuts"),
    (["{n} has a dog called Biscuit", "{n}'s dog is named Biscuit", "Biscuit is {n}'s dog"],
     "{n} does not have a dog"),
    (["{n} plays tennis on Saturdays", "On Saturdays {n} plays tennis", "{n} has tennis every Saturday"],
     "{n} never plays tennis on Saturdays"),
    (["{n} is vegetarian", "{n} does not eat meat, being vegetarian", "{n} follows a vegetarian diet"],
     "{n} is not vegetarian"),
    (["{n} wants to run the Boston marathon next April", "{n} plans to run the Boston marathon in April",
      "{n}'s goal is the Boston marathon next April"], "{n} does not want to run the Boston marathon"),
    (["{n} prefers window seats on flights", "{n} likes a window seat when flying",
      "On planes {n} prefers the window seat"], "{n} never prefers window seats on flights"),
    (["{n}'s sister Maya lives in Lisbon", "Maya, {n}'s sister, lives in Lisbon", "{n} has a sister Maya in Lisbon"],
     "{n}'s sister Maya does not live in Lisbon"),
    (["{n} is learning Japanese", "{n} takes Japanese lessons", "{n} studies Japanese in the evenings"],
     "{n} is not learning Japanese anymore"),
    (["{n} drives an electric car", "{n}'s car is electric", "{n} owns an electric car"],
     "{n} does not drive an electric car"),
]
ACTIVITIES = ["went hiking", "cooked a curry", "fixed a bike", "read a novel", "watched a film", "visited a museum",
              "painted the fence", "baked bread", "called an old friend", "cleaned the garage", "went swimming",
              "planted tomatoes", "played chess", "wrote a letter", "tried a new cafe", "assembled a bookshelf"]
PLACES = ["at the lake", "downtown", "at home", "in the park", "near the station", "at the library", "by the river"]
WHEN = ["this morning", "yesterday", "last night", "on Sunday", "after work", "during lunch", "before dinner"]


def memories(n: int, tenants: int, nights: int, seed: int = 0) -> list[dict[str, Any]]:
    """n synthetic memories over `nights` days: ~45% restatements, ~8% contradictions, the rest one-offs."""
    rng = random.Random(seed)
    users = NAMES[:tenants]
    stated: dict[str, set[int]] = {u: set() for u in users}
    out = []
    for i in range(n):
        user = users[i % tenants]
        day = i * nights // n
        created = START + timedelta(days=day, minutes=rng.randrange(0, 600))
        roll = rng.random()
        if roll < 0.08 and stated[user]:
            text = FACTS[rng.choice(sorted(stated[user]))][1]
        elif roll < 0.53:
            k = rng.randrange(len(FACTS))
            stated[user].add(k)
            text = rng.choice(FACTS[k][0])
        else:
            text = f"{{n}} {rng.choice(ACTIVITIES)} {rng.choice(PLACES)} {rng.choice(WHEN)}"
            if rng.random() < 0.5:
                text += f" with {rng.choice(NAMES)}"
        out.append({"id": f"m{i:06d}", "user_id": user.lower(), "role": "user", "content": text.format(n=user) + ".",
                    "created_at": created, "kind": "turn"})
    return out


@dataclass
class Tally:
    """Requests and estimated tokens of one design."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    by_part: dict[str, list[int]] = field(default_factory=dict)

    def add(self, part: str, requests: int, inp: int, out: int) -> None:
        self.requests += requests
        self.input_tokens += inp
        self.output_tokens += out
        row = self.by_part.setdefault(part, [0, 0, 0])
        row[0] += requests
        row[1] += inp
        row[2] += out

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    price_factor: float = 1.0

    def cost(self, model: str) -> float:
        return estimate_cost(model, self.input_tokens, self.output_tokens) * self.price_factor


def nightly(mems: list[dict[str, Any]], nights: int, embedder_name: str, workdir: Path) -> tuple[Tally, dict[str, Any]]:
    """Run the real stages night by night; count the batched extraction and resolution requests."""
    settings = load_settings(db_path=workdir / "nightly.duckdb", embedder=embedder_name, llm="fake")
    emb = embed.from_settings(settings)
    tally = Tally()
    seen: dict[str, Any] = {"clusters": 0, "facts_extracted": 0, "reviews_decided": 0, "reviews_queued": 0, "auto_merged": 0,
            "contradictions": 0}
    for night in range(nights):
        as_of = START + timedelta(days=night + 1, hours=-5)  # 03:00 after the day's memories
        todays = [m for m in mems if START + timedelta(days=night) <= m["created_at"] < START + timedelta(days=night + 1)]
        if todays:
            add_episodes(todays, settings)
        run_id = f"bench-night-{night:03d}"
        for user in sorted({m["user_id"] for m in mems}):
            ctx = StageContext(settings, user, run_id, as_of)
            run_stage(ctx, "embed", Tools(emb))
            run_stage(ctx, "extract", Tools(emb))  # extractive facts: the same clusters the LLM would see
            clusters = _run_clusters(settings, user, run_id)
            if clusters:
                llm = FakeLLM(rule_based_responder)
                result = extract_facts(llm, clusters, settings.llm_max_prompt_tokens)
                tally.add("extraction (batched)", result.usage.requests, result.usage.input_tokens,
                          result.usage.output_tokens)
                seen["clusters"] += len(clusters)
                seen["facts_extracted"] += len(result.facts)
            seen["contradictions"] += run_stage(ctx, "confidence", Tools(emb)).counts.get("contradictions", 0)
            seen["auto_merged"] += run_stage(ctx, "merge", Tools(emb)).counts.get("facts_merged", 0)
            counts = resolve_pending(settings, FakeLLM(rule_based_responder), user, run_id, as_of)
            tally.add("resolution (batched)", counts["requests"], counts["input_tokens"], counts["output_tokens"])
            seen["reviews_decided"] += counts["applied"]
    with db.open_store(settings) as con:
        statuses = con.execute("select status, error is not null, count(*) from llm_reviews group by all order by all").fetchall()
    seen["reviews_queued"] = sum(n for *_, n in statuses)
    seen["review_statuses"] = ", ".join(f"{st}{' (with error)' if err else ''}: {n}" for st, err, n in statuses)
    return tally, seen


def product_path(mems: list[dict[str, Any]], nights: int, embedder_name: str, workdir: Path, mode: str
                 ) -> tuple[Tally, dict[str, Any]]:
    """The nightly stages with the LLM configured as ENGRAM_LLM_MODE=`mode` (fake answers); its spend.

    interactive: the extract stage sends its clusters and the resolve stage the queued reviews while
    the run waits. batch: the stages queue that work, one job per night holds every tenant's
    requests, and the next night collects it (the last job is collected after the last night).
    """
    settings = load_settings(db_path=workdir / f"{mode}.duckdb", embedder=embedder_name, llm="fake", llm_mode=mode)
    emb = embed.from_settings(settings)
    llm = FakeLLM(rule_based_responder)
    batch = FakeBatch(rule_based_responder, workdir / f"{mode}-jobs")
    tally = Tally(price_factor=BATCH_PRICE_FACTOR if mode == "batch" else 1.0)
    seen: dict[str, Any] = {"jobs": 0 if mode == "batch" else None, "cases": 0}
    users = sorted({m["user_id"] for m in mems})
    for night in range(nights + (1 if mode == "batch" else 0)):
        as_of = START + timedelta(days=night + 1, hours=-5)
        run_id = f"bench-{mode}-{night:03d}"
        if mode == "batch":
            collect_batches(settings, batch, run_id, as_of, emb)
            if night == nights:
                break
        todays = [m for m in mems if START + timedelta(days=night) <= m["created_at"] < START + timedelta(days=night + 1)]
        if todays:
            add_episodes(todays, settings)
        for user in users:
            ctx = StageContext(settings, user, run_id, as_of)
            run_stage(ctx, "embed", Tools(emb))
            got = run_stage(ctx, "extract", Tools(emb, llm)).counts
            if mode == "interactive" and "llm" in got:
                u = got["llm"]
                tally.add("extraction", u["requests"], u["input_tokens"], u["output_tokens"])
                seen["cases"] += got.get("clusters", 0)
            run_stage(ctx, "confidence", Tools(emb))
            run_stage(ctx, "merge", Tools(emb))
            if mode == "interactive":
                counts = resolve_pending(settings, llm, user, run_id, as_of)
                tally.add("resolution", counts["requests"], counts["input_tokens"], counts["output_tokens"])
        if mode == "batch":
            seen["jobs"] += submit_batch(settings, batch, run_id, as_of)["jobs_submitted"]
    with db.open_store(settings) as con:  # bench-only reads; the product's SQL lives in sql/
        if mode == "batch":
            for kind, n, inp, out, cases in con.execute(
                    "select case when kind = 'extraction' then 'extraction' else 'resolution' end, count(*),"
                    " sum(input_tokens), sum(output_tokens), sum(len(review_ids)) from llm_batch_items"
                    " where status <> 'submitted' group by 1 order by 1").fetchall():
                tally.add(kind, n, int(inp or 0), int(out or 0))
                seen["cases"] += int(cases)
        else:
            seen["cases"] += con.execute("select count(*) from llm_reviews where input_tokens is not null").fetchall()[0][0]
        seen["facts"] = con.execute("select count(*) from facts").fetchall()[0][0]
        statuses = con.execute("select kind, status, count(*) from llm_reviews group by all order by all").fetchall()
    seen["review_statuses"] = ", ".join(f"{k} {st}: {n}" for k, st, n in statuses) or "none"
    seen["tokens_per_case"] = round(tally.tokens / max(seen["cases"], 1), 1)
    return tally, seen


def _run_clusters(settings: Any, user: str, run_id: str) -> list[ClusterInput]:
    """The clusters the run's extract stage formed: each created fact's extracted_from episodes."""
    with db.open_store(settings) as con:
        rows = con.execute(  # bench-only read; the product's SQL lives in sql/
            "select s.fact_id, e.id, e.role, e.content, e.created_at from fact_sources s"
            " join episodes e on e.user_id = s.user_id and e.id = s.episode_id"
            " where s.user_id = $u and s.run_id = $r and s.relation = 'extracted_from'"
            " order by s.fact_id, e.created_at, e.id", {"u": user, "r": run_id}).fetchall()
    by_fact: dict[str, list[tuple[str, str | None, str, datetime]]] = {}
    for fid, eid, role, content, created in rows:
        by_fact.setdefault(fid, []).append((eid, role, content, created))
    return [ClusterInput(fid, eps) for fid, eps in by_fact.items()]


def write_time(mems: list[dict[str, Any]], embedder_name: str, context: int, top_s: int) -> Tally:
    """Two calls per add: extraction with `context` previous messages, update with `top_s` similar memories."""
    settings = load_settings(embedder=embedder_name)
    emb = embed.from_settings(settings)
    llm = FakeLLM(rule_based_responder)
    tally = Tally()
    vectors = emb.embed([m["content"] for m in mems])
    history: dict[str, list[int]] = {}
    store: dict[str, list[tuple[str, np.ndarray]]] = {}
    for m in sorted(mems, key=lambda x: x["created_at"]):
        user = m["user_id"]
        past = history.setdefault(user, [])
        window = [mems[j] for j in past[-context:]] + [m]
        prompt = extraction_prompt([{"cluster": "k1", "episodes": [
            {"id": f"e{n}", "role": w["role"], "at": w["created_at"].isoformat(timespec="seconds"), "text": w["content"]}
            for n, w in enumerate(window, 1)]}])
        reply = llm.generate(prompt, ExtractionReply)
        tally.add("extraction (per add)", 1, reply.input_tokens, reply.output_tokens)
        # the fake states a cluster's first message; at write time the fact is the new message's statement
        facts = [m["content"].rstrip(".")] if any(c.facts for c in reply.parsed.clusters) else []
        mine = store.setdefault(user, [])
        for text in facts:
            vec = vectors[int(m["id"][1:])]
            similar = sorted(mine, key=lambda tv: -float(tv[1] @ vec))[:top_s]
            record = {"case": "c1", "flagged_because": "new memory vs stored memories", "facts": [
                {"id": f"f{n}", "text": t, "type": "fact", "category": "general", "asserted_at": "",
                 "confidence": 0.5, "evidence": 1}
                for n, (t, _) in enumerate([(text, vec), *similar], 1)]}
            update = review_prompt("merge", [record])
            answer = llm.generate(update, MergeReply)
            tally.add("update decision (per add)", 1, answer.input_tokens, answer.output_tokens)
            mine.append((text, vec))
        past.append(int(m["id"][1:]))
    return tally


MODEL = "gemini-2.5-flash"


def mode_rows(night: Tally, modes: dict[str, tuple[Tally, dict[str, Any]]], write: Tally) -> list[dict[str, Any]]:
    """The per-mode figures (also the --json output): nightly vs write-time requests and cost."""
    out = []
    for mode, (tally, seen) in [("interactive-cluster-proxy", (night, {})), *modes.items()]:
        cost = tally.cost(MODEL)
        out.append({
            "mode": mode, "nightly_requests": tally.requests, "nightly_input_tokens": tally.input_tokens,
            "nightly_output_tokens": tally.output_tokens, "nightly_cost_usd": round(cost, 6),
            "write_time_requests": write.requests, "write_time_cost_usd": round(write.cost(MODEL), 6),
            "cost_share_of_write_time": round(cost / max(write.cost(MODEL), 1e-12), 4),
            "price_factor": tally.price_factor, "batch_jobs": seen.get("jobs"), "cases": seen.get("cases"),
            "tokens_per_case": seen.get("tokens_per_case"),
        })
    return out


def modes_section(rows: list[dict[str, Any]], modes: dict[str, tuple[Tally, dict[str, Any]]]) -> list[str]:
    """Markdown: both LLM modes through the product path, side by side."""
    lines = [
        "", "## ENGRAM_LLM_MODE side by side (the product path)", "",
        "| mode | requests (extraction + resolution) | batch jobs | input tokens | output tokens | tokens per case | "
        "price | est. cost | share of write-time cost |", "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        tally = modes[row["mode"]][0] if row["mode"] in modes else None
        parts = " + ".join(f"{r[0]:,}" for r in tally.by_part.values()) if tally else ""
        lines.append(
            f"| {row['mode']} | {row['nightly_requests']:,}{f' ({parts})' if parts else ''} | "
            f"{row['batch_jobs'] if row['batch_jobs'] is not None else '-'} | {row['nightly_input_tokens']:,} | "
            f"{row['nightly_output_tokens']:,} | {row['tokens_per_case'] if row['tokens_per_case'] is not None else '-'} | "
            f"{'batch (x0.5)' if row['price_factor'] < 1 else 'interactive'} | ${row['nightly_cost_usd']:.4f} | "
            f"**{row['cost_share_of_write_time']:.1%}** |")
    lines.append(f"| write-time | {rows[0]['write_time_requests']:,} | - | | | | interactive | "
                 f"${rows[0]['write_time_cost_usd']:.4f} | 100% |")
    for mode, (_, seen) in modes.items():
        lines.append(f"\n- {mode}: {seen['facts']} facts at the end; reviews: {seen['review_statuses']}")
    return lines


def report(args: argparse.Namespace, night: Tally, seen: dict[str, Any], write: Tally, seconds: float,
           modes: dict[str, tuple[Tally, dict[str, Any]]] | None = None) -> str:
    model = MODEL
    lines = [
        "# LLM calls: nightly batched pipeline vs write-time (two calls per add)", "",
        f"- date: {datetime.now():%Y-%m-%d %H:%M}; machine: {platform.platform()}, {os.cpu_count()} cpu(s), "
        f"python {platform.python_version()}",
        f"- command: `python -m bench.perf.llm_calls --memories {args.memories} --tenants {args.tenants} "
        f"--nights {args.nights} --embedder {args.embedder}`; wall time {seconds:.1f} s",
        f"- data: {args.memories} synthetic memories, {args.tenants} tenants, {args.nights} nights; "
        "~45% restatements of 12 facts per tenant, ~8% later contradictions, the rest one-off events",
        "- tokens: estimated as characters / 4 for both designs (same prompt builders, same fake answers); "
        f"cost: {model} list prices from engram.llm_gemini.PRICES_PER_MTOK (estimate)",
        f"- nightly: {seen['clusters']} clusters sent to extraction, {seen['facts_extracted']} facts back; "
        f"{seen['auto_merged']} facts auto-merged by rule (no LLM), {seen['contradictions']} contradictions flagged; "
        f"{seen['reviews_queued']} reviews queued, {seen['reviews_decided']} decided and applied "
        f"(final statuses: {seen['review_statuses']})", "",
        "| design | part | requests | input tokens | output tokens |", "|---|---|---:|---:|---:|",
    ]
    for name, tally in (("nightly", night), ("write-time", write)):
        for part, (r, i, o) in tally.by_part.items():
            lines.append(f"| {name} | {part} | {r:,} | {i:,} | {o:,} |")
        lines.append(f"| **{name}** | **total** | **{tally.requests:,}** | **{tally.input_tokens:,}** | "
                     f"**{tally.output_tokens:,}** |")
    req_ratio = write.requests / max(night.requests, 1)
    tok_ratio = write.tokens / max(night.tokens, 1)
    lines += [
        "",
        f"**Ratio (write-time / nightly): {req_ratio:.1f}x requests, {tok_ratio:.1f}x tokens** "
        f"(estimated cost ${write.cost(model):.4f} vs ${night.cost(model):.4f}).",
        "",
        "Notes:",
        "- The write-time baseline is modelled after the mem0 paper's pipeline (an extraction call with the "
        f"last {args.context} messages as context, then an update call per extracted fact against the "
        f"{args.top_s} most similar stored memories). Its prompt sizes use engram's own prompt builders, so "
        "only the call pattern differs; real mem0 prompts are longer, so this baseline is conservative.",
        "- Nightly LLM extraction sees only clustered episodes (HDBSCAN noise becomes an extractive fact, with no LLM call, when it states one about its speaker), and each night "
        "sends one extraction request per tenant unless llm_max_prompt_tokens forces a split; resolution sends "
        "at most one request per kind per tenant per night.",
        "- With a real model the reply tokens differ (thinking tokens bill as output); the request counts do not.",
        "- 'failed' reviews here are stale ones: an earlier decision in the same request retired one of their "
        "facts (merged it into another), so the case no longer applies and is closed without being applied.",
    ]
    if modes:
        lines += modes_section(mode_rows(night, modes, write), modes)
        lines += [
            "",
            "- interactive-cluster-proxy is the table above (each extractive fact's episodes sent as one cluster; "
            "the measurement of earlier reports). interactive and batch run the real stages with "
            "ENGRAM_LLM=fake: the extract stage's HDBSCAN clusters and the queued reviews, both modes on the same "
            "memories. batch: one job per night for every tenant (each tenant's requests separate items), "
            "collected by the next night; clusters trimmed to "
            "engram.consolidate.batch.EXTRACTION_CLUSTER_MAX_CHARS characters and each episode sent once; "
            "cost at the Batch API's price (50%).",
            "- tokens per case: all tokens of the mode / cases sent (clusters and reviews).",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run both designs on the same memories and write bench/perf/LLM_CALLS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--nights", type=int, default=10)
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    parser.add_argument("--context", type=int, default=10, help="write-time: previous messages per extraction")
    parser.add_argument("--top-s", dest="top_s", type=int, default=10, help="write-time: memories per update")
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument("--json", type=Path, default=None, help="also write the per-mode figures as JSON here")
    args = parser.parse_args()
    mems = memories(args.memories, args.tenants, args.nights)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        night, seen = nightly(mems, args.nights, args.embedder, Path(tmp))
        modes = {mode: product_path(mems, args.nights, args.embedder, Path(tmp), mode)
                 for mode in ("interactive", "batch")}
    write = write_time(mems, args.embedder, args.context, args.top_s)
    text = report(args, night, seen, write, time.perf_counter() - t0, modes)
    args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(mode_rows(night, modes, write), indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
