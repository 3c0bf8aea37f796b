"""Answer at a token budget: does what an agent receives hold the answer? (issue 56)

    python -m bench.quality.answer_budget [--chats 1-10] [--budgets 400,1500,4000] [--keep /tmp/ab]

For each BEAM chat (bench/quality/beam.py loads it) and each LoCoMo dev conversation, one tenant of one
temporary store: ingest, the embed stage, a copy of the store (the raw log: engram's search before any
night), then the rest of the night. For every question and budget B, the context each system gives:
- engram: exactly the MCP `search_memory` reply (its JSON text) for max_tokens=B, after the night;
- raw: engram's search over the episodes before the night (100 ranked), packed whole by
  engram.query.build_context at B;
- bm25: the top 100 turns of BM25 over "role: content", packed the same way;
- gold: the question's source turns, packed the same way (the ceiling).
Items are BEAM's rubric items and LoCoMo's `answer` (categories 1-4), counted only when the gold turns
contain them (a LoCoMo turn read with its session date written out, as a reader sees it), scored by
../shared/tools/answer_at_budget.py; answer@B is the mean share of a question's items present.
Also: tokens of the MCP reply at the default budget (mean, max) and its search time (p50, p95).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.beam import DEFAULT_DATA as BEAM_DATA
from bench.quality.beam import chat_range, chat_records, gold_turns, plain_tokens
from engram import clock
from engram import embed as embedders
from engram.index.bm25 import BM25
from engram.index.vector_index import CACHE
from engram.llm.prompt_quote import memory_record
from engram.mcp.server import EngramMCP
from engram.query.budget import readable_date
from engram.query.passive import build_context
from engram.query.search import search_memory
from engram.query.wordpiece import count_tokens
from engram.settings import Settings, load_settings
from engram.store.ingest import add_episodes
from engram.store.locomo import locomo_records

SHARED = Path(__file__).resolve().parents[3] / "shared"
LOCOMO_DATA = SHARED / "data" / "locomo" / "locomo_dev.json"
SCORER = SHARED / "tools" / "answer_at_budget.py"
SYSTEMS = ("engram", "raw", "bm25", "gold")
RANKED = 100


def scorer() -> Any:
    """The shared scorer module (../shared/tools/answer_at_budget.py)."""
    spec = importlib.util.spec_from_file_location("answer_at_budget", SCORER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def beam_tenants(folder: Path, chats: list[int]) -> list[dict[str, Any]]:
    """Each BEAM chat as a tenant: its records and its questions (gold turn ids, rubric items)."""
    out = []
    for n in chats:
        user = f"beam{n}"
        records = chat_records(folder / str(n), user)
        qs = json.loads((folder / str(n) / "probing_questions.json").read_text(encoding="utf-8"))
        questions = [{"question": q["question"], "category": cat, "rubric": q.get("rubric") or [],
                      "gold": [f"{user}:{t}" for t in gold_turns(q.get("source_chat_ids"))]}
                     for cat, items in qs.items() for q in items if gold_turns(q.get("source_chat_ids"))]
        out.append({"user": user, "source": "beam", "group": "chats 1-5" if n <= 5 else "chats 6-10",
                    "records": records, "questions": questions})
    return out


def locomo_tenants(path: Path) -> list[dict[str, Any]]:
    """Each LoCoMo dev conversation as a tenant; a question's item is its answer (categories 1-4)."""
    from bench.quality.locomo import evidence_ids

    records = locomo_records(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in data:
        user = str(sample["sample_id"])
        questions = [{"question": q["question"], "category": str(q["category"]), "rubric": [str(q["answer"])],
                      "gold": [f"{user}:{d}" for d in evidence_ids(q.get("evidence") or [])]}
                     for q in sample["qa"] if q.get("category") in (1, 2, 3, 4) and "answer" in q]
        out.append({"user": user, "source": "locomo", "group": "locomo dev",
                    "records": [r for r in records if r["user_id"] == user], "questions": questions})
    return out


def as_record(r: dict[str, Any]) -> dict[str, Any]:
    """A turn as a quoted memory (what build_context packs): id, type, date, the speaker and the text."""
    return memory_record(r["id"], "turn", r["created_at"], f"{r['role']}: {r['content']}")


def build_stores(root: Path, tenants: list[dict[str, Any]], embedder: Any) -> tuple[Path, Path]:
    """(raw store, night store) under root: every tenant ingested and embedded, copied, then consolidated."""
    from engram.consolidate.runner import STAGES, Tools, run_tenant

    raw, night = root / "raw", root / "night"
    if (night / "DONE").exists():
        return raw / "store.duckdb", night / "store.duckdb"
    shutil.rmtree(root, ignore_errors=True)
    night.mkdir(parents=True)
    settings = settings_at(night / "store.duckdb")
    as_of, tools = clock.now(), Tools(embedder)
    for t in tenants:
        add_episodes(t["records"], settings)
        run_tenant(settings, t["user"], f"ab-{t['user']}-embed", as_of, ["embed"], tools)
    CACHE.clear()
    shutil.copytree(night, raw)
    for t in tenants:
        run_tenant(settings, t["user"], f"ab-{t['user']}-night", as_of, [s for s in STAGES if s != "archive"], tools)
    CACHE.clear()
    (night / "DONE").write_text("ok")
    return raw / "store.duckdb", night / "store.duckdb"


def settings_at(path: Path) -> Settings:
    """Settings of a store at `path` (no LLM, the default embedder)."""
    os.environ["ENGRAM_DB_PATH"] = str(path)
    return load_settings(llm="none", db_path=path)


def evaluate(tenants: list[dict[str, Any]], raw_db: Path, night_db: Path, budgets: list[int], embedder: Any,
             progress: Any = print) -> dict[str, Any]:
    """answer@B per system, group and budget, and the MCP reply's size and time at the default budget."""
    sc = scorer()
    raw_settings, night_settings = settings_at(raw_db), settings_at(night_db)
    scores: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    by_category: dict[tuple[str, str, str, int], list[float]] = defaultdict(list)
    reply_tokens: list[int] = []
    reply_ms: list[float] = []
    over = 0
    for t in tenants:
        user, records = t["user"], t["records"]
        by_id = {r["id"]: r for r in records}
        bm25 = BM25([plain_tokens(f"{r['role']}: {r['content']}") for r in records])
        server = EngramMCP(night_settings, user)
        server.ctx._embedder = embedder
        default_budget = night_settings.max_tokens
        asked = 0
        for q in t["questions"]:
            gold = [by_id[g] for g in q["gold"] if g in by_id]
            gold_text = " ".join(f"{readable_date(r['created_at'])} {r['role']}: {r['content']}" for r in gold)
            items = [it for it in sc.rubric_items(q) if sc.present(it, gold_text)]
            if not items:
                continue
            asked += 1
            raw_hits = search_memory(q["question"], "both", RANKED, user, settings=raw_settings, embedder=embedder)
            s = bm25.score(plain_tokens(q["question"]))
            top = [records[int(i)] for i in np.argsort(-s, kind="stable")[:RANKED] if s[i] > 0]
            for b in budgets:
                t0 = time.perf_counter()
                reply = server.call("search_memory", {"query": q["question"], "max_tokens": b})
                ms = (time.perf_counter() - t0) * 1000
                text = reply.content[0].text
                n = count_tokens(text)
                over += n > b
                if b == default_budget:
                    reply_tokens.append(n)
                    reply_ms.append(ms)
                contexts = {
                    "engram": text,
                    "raw": build_context(budget=b, memories=raw_hits)["text"],
                    "bm25": build_context(budget=b, memories=[as_record(r) for r in top])["text"],
                    "gold": build_context(budget=b, memories=[as_record(r) for r in gold])["text"],
                }
                for system, context in contexts.items():
                    share = float(np.mean(sc.score(items, context)))
                    scores[(t["group"], system, b)].append(share)
                    by_category[(t["group"], q["category"], system, b)].append(share)
        progress(f"{user}: {asked} questions")
    groups = sorted({g for g, _, _ in scores}, key=lambda g: (g.startswith("locomo"), g))
    beam_all = [g for g in groups if g.startswith("chats")]
    summary: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    for g in [*groups, *(["BEAM 1-10"] if len(beam_all) > 1 else [])]:
        members = beam_all if g == "BEAM 1-10" else [g]
        for system in SYSTEMS:
            for b in budgets:
                vals = [v for m in members for v in scores[(m, system, b)]]
                summary.setdefault(g, {})[f"{system}@{b}"] = float(np.mean(vals)) if vals else float("nan")
                counts[g] = len(vals)
    cats = {f"{g} | {c} | {s}@{b}": float(np.mean(v)) for (g, c, s, b), v in sorted(by_category.items())}
    return {"summary": summary, "questions": counts, "by_category": cats, "over_budget": over,
            "reply_tokens": {"mean": float(np.mean(reply_tokens)) if reply_tokens else 0.0,
                             "max": int(max(reply_tokens, default=0)), "budget": night_settings.max_tokens},
            "reply_ms": {"p50": float(np.percentile(reply_ms, 50)) if reply_ms else 0.0,
                         "p95": float(np.percentile(reply_ms, 95)) if reply_ms else 0.0}}


def report(result: dict[str, Any], budgets: list[int], command: str) -> str:
    """The markdown report: answer@B per group, system and budget; the reply's size and time."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "# Answer at a token budget (bench/quality/answer_budget.py, issue 56)", "",
        f"- command: `{command}`",
        f"- date: {now}; machine: {platform.machine()} {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cores (shared), Python {platform.python_version()}; load average at the end {load:.1f}",
        "- engram = the MCP `search_memory` reply (JSON text) at max_tokens=B after the night; raw = engram's "
        "search before any night, bm25 = BM25 over turns, gold = the source turns: each packed whole by "
        "`engram.query.build_context` at B. Items: BEAM rubric items / LoCoMo answers (categories 1-4) that the "
        "gold turns contain; scored by ../shared/tools/answer_at_budget.py", "",
        "| group | questions | " + " | ".join(f"{s}@{b}" for b in budgets for s in SYSTEMS) + " |",
        "|---|---|" + "---|" * (len(budgets) * len(SYSTEMS)),
    ]
    for g, row in result["summary"].items():
        lines.append(f"| {g} | {result['questions'][g]} | "
                     + " | ".join(f"{row[f'{s}@{b}']:.3f}" for b in budgets for s in SYSTEMS) + " |")
    lines += ["", "| group | " + " | ".join(f"engram - raw @{b}" for b in budgets) + " | engram - bm25 @1500 |",
              "|---|" + "---|" * (len(budgets) + 1)]
    for g, row in result["summary"].items():
        diffs = [row[f"engram@{b}"] - row[f"raw@{b}"] for b in budgets]
        bm = row.get("engram@1500", float("nan")) - row.get("bm25@1500", float("nan"))
        lines.append(f"| {g} | " + " | ".join(f"{d:+.3f}" for d in diffs) + f" | {bm:+.3f} |")
    rt, ms = result["reply_tokens"], result["reply_ms"]
    lines += ["", f"MCP `search_memory` reply at the default budget ({rt['budget']} tokens): mean {rt['mean']:.0f} "
              f"tokens, max {rt['max']}; time per call p50 {ms['p50']:.1f} ms, p95 {ms['p95']:.1f} ms. "
              f"Replies over their budget at any B: {result['over_budget']}.", ""]
    return "\n".join(lines)


def main() -> None:
    """Build (or reuse with --keep) the stores, run the questions, print and write the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--beam", type=Path, default=BEAM_DATA)
    ap.add_argument("--chats", default="1-10")
    ap.add_argument("--locomo", type=Path, default=LOCOMO_DATA)
    ap.add_argument("--no-locomo", action="store_true")
    ap.add_argument("--budgets", default="400,1500,4000")
    ap.add_argument("--keep", type=Path, default=None, help="keep the stores here and reuse them on the next run")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("ANSWER_AT_BUDGET.md"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    tenants = beam_tenants(args.beam, chat_range(args.chats)) if args.chats else []
    if not args.no_locomo:
        tenants += locomo_tenants(args.locomo)
    import tempfile

    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="engram-ab-", ignore_cleanup_errors=True)
    root = args.keep or Path(tmp.name)
    try:
        embedder = embedders.from_settings(load_settings(llm="none"))
        raw_db, night_db = build_stores(root, tenants, embedder)
        result = evaluate(tenants, raw_db, night_db, budgets, embedder)
    finally:
        if tmp is not None:
            tmp.cleanup()
    text = report(result, budgets, " ".join(["python -m bench.quality.answer_budget", *sys.argv[1:]]))
    print(text)
    args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
