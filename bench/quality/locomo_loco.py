"""Leave-one-conversation-out check of search constants chosen on LoCoMo dev.

    python -m bench.quality.locomo_loco [--data ../shared/data/locomo/locomo_dev.json]

The dev split is the only LoCoMo data here, so a constant tuned on it (engram.query.search.CONTEXT:
how much a turn borrows of the question before it and of the turn after it) is checked the way held-out data would
check it: for each of the conversations, the value is chosen on the others (the mean recall@10 of
the target categories, multi-hop, temporal and single-hop) and measured on the one left out. The
default search (memory units after one nightly run) answers every question once per candidate value.
Writes bench/quality/LOCOMO_LOCO.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.quality.locomo import CATEGORIES, DEFAULT_DATA, consolidate, evidence_ids
from engram import embed as embedders
from engram.query import search as search_module
from engram.settings import load_settings
from engram.store.ingest import add_episodes
from engram.store.locomo import locomo_records

CANDIDATES = [(0.25, 0.25), (0.5, 0.1), (0.5, 0.25), (0.75, 0.1), (0.75, 0.25), (1.0, 0.25)]
TARGET_CATEGORIES = (1, 2, 4)  # multi-hop, temporal, single-hop
Result = list[tuple[str, int, float]]  # (conversation, category, recall@10) per question


def ask_all(settings, embedder, samples, by_user, sources) -> Result:  # noqa: ANN001
    """Recall@10 of the default search (memory units, hybrid) for every question with known evidence."""
    out: Result = []
    for sample in samples:
        user = str(sample["sample_id"])
        known = {r["id"].split(":", 1)[1] for r in by_user[user]}
        for qa in sample["qa"]:
            gold = [e for e in evidence_ids(qa.get("evidence", [])) if e in known]
            if not gold:
                continue
            hits = search_module.search_memory(qa["question"], "both", 10, user, settings=settings, embedder=embedder)
            covers = [sources[user].get(h.id, set()) | {x["id"] for x in h.sources} if h.table == "facts"
                      else {h.id} for h in hits]
            seen = {e.split(":", 1)[1] for c in covers for e in c}
            out.append((user, qa["category"], sum(g in seen for g in gold) / len(gold)))
    return out


def category_means(result: Result, keep=lambda user: True) -> dict[int, float]:  # noqa: ANN001
    """Mean recall per category over the questions of the kept conversations."""
    cats: dict[int, list[float]] = defaultdict(list)
    for user, cat, r in result:
        if keep(user):
            cats[cat].append(r)
    return {c: float(np.mean(v)) for c, v in cats.items()}


def objective(means: dict[int, float]) -> float:
    """What a value is chosen by: the mean of the target categories' recall@10."""
    return float(np.mean([means[c] for c in TARGET_CATEGORIES if c in means]))


def leave_one_out(results: dict[tuple, Result]) -> tuple[dict[str, tuple], dict[int, float]]:
    """For each conversation, the value chosen on the others; and the recall of the chosen values on
    the conversations they were not chosen on, per category."""
    users = sorted({u for res in results.values() for u, _, _ in res})
    chosen: dict[str, tuple] = {}
    held: Result = []
    for left_out in users:
        best = max(results, key=lambda v: objective(category_means(results[v], lambda u: u != left_out)))
        chosen[left_out] = best
        held += [row for row in results[best] if row[0] == left_out]
    return chosen, category_means(held)


def run(data: Path) -> dict:
    """Build the store once, ask every question with every candidate CONTEXT."""
    tmp = tempfile.TemporaryDirectory(prefix="engram-loco-")
    os.environ["ENGRAM_DB_PATH"] = str(Path(tmp.name) / "locomo.duckdb")
    settings = load_settings(embedder="minilm", llm="none")
    embedder = embedders.from_settings(settings)
    records = locomo_records(data)
    texts = [r["content"] for r in records]
    vectors = np.vstack([embedder.embed(texts[i: i + 64]) for i in range(0, len(texts), 64)])
    add_episodes(records, settings, embeddings=vectors, embedding_model=embedder.model)
    by_user: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_user[r["user_id"]].append(r)
    sources = consolidate(settings, sorted(by_user), embedder)
    samples = json.loads(data.read_text(encoding="utf-8"))
    default = search_module.CONTEXT
    results: dict[tuple, Result] = {}
    t0 = time.perf_counter()
    try:
        for value in CANDIDATES:
            search_module.CONTEXT = value
            results[value] = ask_all(settings, embedder, samples, by_user, sources)
    finally:
        search_module.CONTEXT = default
    tmp.cleanup()
    return {"results": results, "default": default, "seconds": time.perf_counter() - t0}


def report(run_out: dict, data: Path) -> str:
    """The markdown report."""
    results, default = run_out["results"], run_out["default"]
    chosen, held = leave_one_out(results)
    lines = [
        "# LoCoMo: leave-one-conversation-out check of the search's turn context (bench/quality/locomo_loco.py)", "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()} {platform.system()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; {run_out['seconds']:.0f} s of questions",
        f"- data: {data.name}; command: `python -m bench.quality.locomo_loco`",
        "- CONTEXT = (weight of the question before, weight of the turn after) a turn borrows of their scores "
        "(a turn borrows from the turn before it only when that turn asks something); "
        f"the default on main is {default}",
        "- metric: recall@10 of the default search (memory units, hybrid) after one nightly run, per category; "
        "a value is chosen by the mean of multi-hop, temporal and single-hop", "",
        "| CONTEXT | " + " | ".join(CATEGORIES.values()) + " | objective |",
        "|---|" + "---|" * (len(CATEGORIES) + 1),
    ]
    for value, res in results.items():
        m = category_means(res)
        lines.append(f"| {value} | " + " | ".join(f"{m.get(c, float('nan')):.3f}" for c in CATEGORIES)
                     + f" | {objective(m):.3f} |")
    lines += ["", "Chosen on the other conversations, per conversation left out:", ""]
    lines += [f"- {user}: {value}" for user, value in chosen.items()]
    base = category_means(results[CANDIDATES[0]])
    lines += ["", "| | " + " | ".join(CATEGORIES.values()) + " |", "|---|" + "---|" * len(CATEGORIES),
              "| held out (value chosen without the conversation) | "
              + " | ".join(f"{held.get(c, float('nan')):.3f}" for c in CATEGORIES) + " |",
              f"| the default on main, {default}, all conversations | "
              + " | ".join(f"{category_means(results[default]).get(c, float('nan')):.3f}" for c in CATEGORIES) + " |"
              if default in results else "",
              f"| symmetric {CANDIDATES[0]} | " + " | ".join(f"{base.get(c, float('nan')):.3f}"
                                                                     for c in CATEGORIES) + " |"]
    return "\n".join(line for line in lines) + "\n"


def main() -> None:
    """Run the check and write bench/quality/LOCOMO_LOCO.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "LOCOMO_LOCO.md")
    args = parser.parse_args()
    text = report(run(args.data), args.data)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
