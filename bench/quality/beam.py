"""BEAM (user-assistant project chats): what the night remembers of an agent's transcript, issue 46.

    python -m bench.quality.beam [--data ../shared/data/beam/100K] [--chats 1-10] [--out bench/quality/BEAM.md]

Each chat is one tenant: every turn an episode (role user / assistant, origin left at its default, as a
new user would send it), dated from its batch's time anchor ("March-15-2024"), one minute apart. BEAM's
"->-> 1,1" index markers are stripped here, when loading, and nowhere else. Per chat: the embed stage
(as `engram embed`), questions against the raw episodes, the rest of the night, questions again.

Measures (computed the same way for BM25 over turns, raw episodes, engram after the night):
- a question's gold turns are its source_chat_ids (flattened); a hit covers an episode's id, or for a
  fact its provenance (extracted_from, supports, contradicts) and the episodes the hit carries;
  recall@10 = share of gold turns covered by the top 10, averaged per category; "all" = mean over every
  question with source turns;
- current-first (knowledge_update): walking the top 10, the first hit covering an original_info or
  updated_info turn covers an updated_info turn;
- linked (contradiction_resolution): a contradiction review, a contradicted/superseded event or a
  contradicts source connects a fact from a first_statement turn with one from a second_statement turn
  (or its episode);
- facts per turn (every fact row the night wrote), facts resting only on assistant turns, and ingest
  to consolidated seconds (embedding included) per chat.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.sql import named
from engram import clock
from engram import embed as embedders
from engram.index.bm25 import BM25
from engram.index.vector_index import CACHE
from engram.query.search import search_memory
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.ingest import add_episodes

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "beam" / "100K"
MARKER = re.compile(r"\s*->->\s*\d+(?:\s*,\s*\d+)*")
METHODS = ("bm25", "raw", "night")
K = 10


def strip_marker(text: str) -> str:
    """The turn without BEAM's index marker ("... ->-> 1,1")."""
    return MARKER.sub("", text).strip()


def chat_records(folder: Path, user_id: str) -> list[dict[str, Any]]:
    """Episode records of one BEAM chat: every turn, dated from its batch's time anchor."""
    batches = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    records: list[dict[str, Any]] = []
    anchor = datetime(2024, 1, 1)
    for batch in batches:
        n = 0
        for s, session in enumerate(batch["turns"]):
            for turn in session:
                if turn.get("time_anchor"):
                    anchor = datetime.strptime(turn["time_anchor"], "%B-%d-%Y")
                    n = 0
                content = strip_marker(str(turn["content"]))
                if not content:
                    continue
                records.append({
                    "id": f"{user_id}:{turn['id']}", "user_id": user_id,
                    "session_id": f"{user_id}:b{batch['batch_number']}s{s}", "role": turn["role"],
                    "kind": "turn", "content": content, "created_at": anchor + timedelta(minutes=n),
                })
                n += 1
    return records


def gold_turns(source: Any) -> list[int]:
    """Every turn id of a source_chat_ids value (a list, a dict of lists, lists nested), in order, once."""
    values = list(source.values()) if isinstance(source, dict) else list(source or [])
    flat: list[int] = []
    while values:
        v = values.pop(0)
        if isinstance(v, list):
            values = v + values
        else:
            flat.append(int(v))
    return list(dict.fromkeys(flat))


def plain_tokens(text: str) -> list[str]:
    """BM25's tokens: lowercase alphanumeric words."""
    return re.findall(r"[a-z0-9]+", text.lower())


def provenance(settings: Settings, user_id: str) -> dict[str, set[str]]:
    """fact id -> the episodes it rests on (extracted_from, supports, contradicts)."""
    with db.open_reader(settings) as con:
        links = db.rows(con, named("quality_fact_sources"), user_id=user_id)
    out: dict[str, set[str]] = defaultdict(set)
    for fid, eid, _ in links:
        out[fid].add(eid)
    return out


def hit_covers(hits: list[Any], sources: dict[str, set[str]]) -> list[set[str]]:
    """The episode ids each hit covers."""
    return [(sources.get(h.id, set()) | {x["id"] for x in h.sources}) if h.table == "facts" else {h.id}
            for h in hits]


def question_scores(covers: list[set[str]], user_id: str, category: str, source: Any) -> dict[str, float]:
    """recall@10 of one question, and current-first for a knowledge update."""
    gold = {f"{user_id}:{t}" for t in gold_turns(source)}
    seen = set().union(*covers[:K]) if covers else set()
    out = {"recall": len(gold & seen) / len(gold)}
    if category == "knowledge_update" and isinstance(source, dict):
        new = {f"{user_id}:{t}" for t in source.get("updated_info", [])}
        old = {f"{user_id}:{t}" for t in source.get("original_info", [])} - new
        first = next((c for c in covers[:K] if c & (new | old)), set())
        out["current_first"] = float(bool(first & new))
    return out


def linked(settings: Settings, user_id: str, source: dict[str, list[int]], sources: dict[str, set[str]]) -> bool:
    """Whether the night connected a fact of the first statement's turns with the second's."""
    first = {f"{user_id}:{t}" for t in source.get("first_statement", [])}
    second = {f"{user_id}:{t}" for t in source.get("second_statement", [])}
    of_first = {f for f, eps in sources.items() if eps & first}
    of_second = {f for f, eps in sources.items() if eps & second}
    with db.open_reader(settings) as con:
        pairs = db.rows(con, named("beam_contradiction_links"), user_id=user_id)
    for a, b, kind in pairs:
        if kind == "source":  # a fact contradicted by an episode
            if (a in of_first and b in second) or (a in of_second and b in first):
                return True
        elif (a in of_first and b in of_second) or (a in of_second and b in of_first):
            if a != b:
                return True
    return False


def fact_counts(settings: Settings, user_id: str) -> dict[str, int]:
    """Fact rows the night wrote, those resting only on assistant turns, and per claim type."""
    with db.open_reader(settings) as con:
        rows = db.rows(con, named("beam_fact_roles"), user_id=user_id)
    out: dict[str, int] = defaultdict(int)
    for claim, roles in rows:
        out["facts"] += 1
        out[f"type:{claim}"] += 1
        if roles and all(r != "user" for r in roles):
            out["assistant_only"] += 1
    return out


def run_chat(folder: Path, n: int, settings: Settings, embedder: Any) -> dict[str, Any]:
    """One chat through ingest, embed, questions, the night, questions."""
    from engram.consolidate.runner import STAGES, Tools, run_tenant

    user = f"beam{n}"
    records = chat_records(folder, user)
    questions = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
    asked = [(cat, q) for cat, qs in questions.items() for q in qs if gold_turns(q.get("source_chat_ids"))]
    bm25 = BM25([plain_tokens(f"{r['role']}: {r['content']}") for r in records])
    ids = [r["id"] for r in records]
    as_of = clock.now()  # a new user consolidates today what the chat said in 2024
    tools = Tools(embedder)
    t0 = time.perf_counter()
    add_episodes(records, settings)
    run_tenant(settings, user, f"beam-{n}-embed", as_of, ["embed"], tools)
    embed_s = time.perf_counter() - t0
    scores: dict[str, list[tuple[str, dict[str, float]]]] = defaultdict(list)
    for cat, q in asked:
        s = bm25.score(plain_tokens(q["question"]))
        order = [int(i) for i in np.argsort(-s, kind="stable")[:K] if s[i] > 0]
        scores["bm25"].append((cat, question_scores([{ids[i]} for i in order], user, cat, q["source_chat_ids"])))
        hits = search_memory(q["question"], "both", K, user, settings=settings, embedder=embedder)
        scores["raw"].append((cat, question_scores(hit_covers(hits, {}), user, cat, q["source_chat_ids"])))
    t1 = time.perf_counter()
    run_tenant(settings, user, f"beam-{n}-night", as_of, [s for s in STAGES if s != "archive"], tools)
    night_s = time.perf_counter() - t1
    sources = provenance(settings, user)
    for cat, q in asked:
        hits = search_memory(q["question"], "both", K, user, settings=settings, embedder=embedder)
        scores["night"].append((cat, question_scores(hit_covers(hits, sources), user, cat, q["source_chat_ids"])))
    links = [linked(settings, user, q["source_chat_ids"], sources)
             for cat, q in asked if cat == "contradiction_resolution"]
    return {"chat": n, "turns": len(records), "embed_s": embed_s, "night_s": night_s, "scores": scores,
            "linked": links, "facts": fact_counts(settings, user)}


def locomo_never_links(path: Path, settings: Settings, embedder: Any) -> dict[str, Any]:
    """The night over LoCoMo dev (no planted contradictions): every link the never rule makes, per 1,000 turns."""
    from engram.consolidate.runner import Tools, run_tenant
    from engram.store.locomo import locomo_records

    records = locomo_records(path, user_prefix="locomo-")
    add_episodes(records, settings)
    links: list[list[str]] = []
    for user in sorted({r["user_id"] for r in records}):
        run_tenant(settings, user, f"{user}-night", clock.now(), ["embed", "extract", "confidence"], Tools(embedder))
        with db.open_reader(settings) as con:
            links += [texts for _, texts in db.rows(con, named("beam_never_links"), user_id=user)]
    return {"turns": len(records), "links": links, "per_1000": 1000 * len(links) / len(records)}


def summarise(chats: list[dict[str, Any]]) -> dict[str, Any]:
    """Per method: recall per category and all, current-first; linked, facts per turn, seconds per chat."""
    out: dict[str, Any] = {}
    for m in METHODS:
        per: dict[str, list[float]] = defaultdict(list)
        cf: list[float] = []
        for c in chats:
            for cat, sc in c["scores"][m]:
                per[cat].append(sc["recall"])
                per["all"].append(sc["recall"])
                if "current_first" in sc:
                    cf.append(sc["current_first"])
        out[m] = {cat: float(np.mean(v)) for cat, v in per.items()}
        out[m]["current_first"] = float(np.mean(cf)) if cf else float("nan")
        followed = per["instruction_following"] + per["preference_following"]
        out[m]["instr_pref"] = float(np.mean(followed)) if followed else float("nan")
    links = [x for c in chats for x in c["linked"]]
    turns = sum(c["turns"] for c in chats)
    facts: dict[str, int] = defaultdict(int)
    for c in chats:
        for k, v in c["facts"].items():
            facts[k] += v
    out["linked"] = (sum(links), len(links))
    out["facts_per_turn"] = facts["facts"] / turns
    out["facts"] = dict(facts)
    out["seconds"] = float(np.mean([c["embed_s"] + c["night_s"] for c in chats]))
    out["embed_s"] = float(np.mean([c["embed_s"] for c in chats]))
    out["night_s"] = float(np.mean([c["night_s"] for c in chats]))
    out["turns"] = turns
    return out


def chat_range(text: str) -> list[int]:
    """'1-10' or '1,3,5' -> chat numbers."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def report(groups: dict[str, dict[str, Any]], command: str) -> str:
    """The markdown report: one column per method and group."""
    lines = [
        "# BEAM: memory from user-assistant transcripts (bench/quality/beam.py, issue 46)", "",
        f"- command: `{command}`",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()} {platform.system()} "
        f"{platform.release()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}; "
        f"load average at the end {os.getloadavg()[0]:.1f}",
        f"- {METHOD_NOTE}", "",
        *tables(groups),
    ]
    return "\n".join(lines) + "\n"


METHOD_NOTE = ("each chat one tenant, every turn an episode (role user/assistant, default origin), dated from its"
               " batch's time anchor; `search_memory(question, limit=10)`; no LLM; BM25 = plain tokens over"
               " \"role: content\"; raw = engram search after the embed stage, before the rest of the night")
CATEGORIES = ("all", "temporal_reasoning", "information_extraction", "multi_session_reasoning", "knowledge_update",
              "contradiction_resolution", "event_ordering", "summarization", "instruction_following",
              "preference_following", "instr_pref", "current_first")


def tables(groups: dict[str, dict[str, Any]]) -> list[str]:
    """The report's two tables (markdown lines): recall per category and method, then the night's counts."""
    names = list(groups)
    lines = ["| measure | " + " | ".join(f"{m} {g}" for g in names for m in METHODS) + " |",
             "|---|" + "---|" * (len(names) * len(METHODS))]
    for cat in CATEGORIES:
        cells = []
        for g in names:
            for m in METHODS:
                v = groups[g][m].get(cat)
                cells.append("-" if v is None or v != v else f"{v:.3f}")
        lines.append(f"| {cat} | " + " | ".join(cells) + " |")
    lines += ["", "| measure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    rows = [
        ("contradiction_resolution linked", lambda s: f"{s['linked'][0]} of {s['linked'][1]}"),
        ("facts per turn", lambda s: f"{s['facts_per_turn']:.2f}"),
        ("facts / resting only on assistant turns", lambda s: f"{s['facts'].get('facts', 0)} / "
                                                               f"{s['facts'].get('assistant_only', 0)}"),
        ("facts by claim type", lambda s: ", ".join(f"{k[5:]} {v}" for k, v in sorted(s["facts"].items())
                                                    if k.startswith("type:"))),
        ("turns", lambda s: str(s["turns"])),
        ("ingest to consolidated, s per chat (embed + night)",
         lambda s: f"{s['seconds']:.1f} ({s['embed_s']:.1f} + {s['night_s']:.1f})"),
    ]
    for name, cell in rows:
        lines.append(f"| {name} | " + " | ".join(cell(groups[g]) for g in names) + " |")
    return lines


def never_lines(never: dict[str, Any], name: str) -> list[str]:
    """The never rule's links on a LoCoMo file (markdown lines)."""
    return [f"## 'Never' links on {name} (no contradictions planted: every link counts as false)", "",
            f"{len(never['links'])} links over {never['turns']} turns: {never['per_1000']:.2f} per 1,000 turns "
            "(target <= 5)", "", *(f"- {' / '.join(t)}" for t in never["links"])]


def chat_numbers(folder: Path) -> list[int]:
    """The chats of a BEAM folder: its numbered subfolders, in order."""
    return sorted(int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


def evaluate(folder: Path, chats: list[int], groups: str = "1-5:chats 1-5;6-10:chats 6-10;1-10:all",
             embedder: str | None = None, locomo: Path | None = None, progress: Any = print) -> dict[str, Any]:
    """Run the chats (each its own tenant, in a temporary store) and summarise them per group of chats
    ("range:name;..."; a group with no chat run is left out); with `locomo`, also count the never rule's
    links on that LoCoMo file. `embedder`: the embedder setting (None: ENGRAM_EMBEDDER or the default)."""
    if not chats:
        raise ValueError(f"chats: no BEAM chat to run in {folder} (numbered folders with chat.json)")
    tmp = tempfile.TemporaryDirectory(prefix="engram-beam-", ignore_cleanup_errors=True)
    before = os.environ.get("ENGRAM_DB_PATH")
    os.environ["ENGRAM_DB_PATH"] = str(Path(tmp.name) / "beam.duckdb")
    try:
        settings = load_settings(llm="none", **({"embedder": embedder} if embedder else {}))
        emb = embedders.from_settings(settings)
        runs = []
        for n in chats:
            c = run_chat(folder / str(n), n, settings, emb)
            progress(f"chat {n}: {c['turns']} turns, embed {c['embed_s']:.1f} s, night {c['night_s']:.1f} s, "
                     f"facts {dict(c['facts'])}, linked {c['linked']}")
            runs.append(c)
        never = locomo_never_links(locomo, settings, emb) if locomo else None
    finally:
        if before is None:
            os.environ.pop("ENGRAM_DB_PATH", None)
        else:
            os.environ["ENGRAM_DB_PATH"] = before
        CACHE.clear()
        tmp.cleanup()
    summary = {}
    for spec in groups.split(";"):
        rng, _, name = spec.partition(":")
        members = [c for c in runs if c["chat"] in set(chat_range(rng))]
        if members:
            summary[name] = summarise(members)
    return {"chats": runs, "groups": summary, "never": never}


def main() -> None:
    """Run the chats, print and write the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--chats", default="1-10", help="chat numbers, e.g. 1-10 or 1,2")
    ap.add_argument("--groups", default="1-5:chats 1-5;6-10:chats 6-10;1-10:all",
                    help="report columns: range:name;...")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("BEAM.md"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--locomo", type=Path, default=None,
                    help="also count the never rule's links on this LoCoMo file (false links: it has none planted)")
    args = ap.parse_args()
    result = evaluate(args.data, chat_range(args.chats), args.groups, locomo=args.locomo)
    text = report(result["groups"], " ".join(["python -m bench.quality.beam", *sys.argv[1:]]))
    if result["never"] is not None:
        text += "\n" + "\n".join(never_lines(result["never"], args.locomo.name)) + "\n"
    print(text)
    args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, default=str, indent=1))


if __name__ == "__main__":
    main()
