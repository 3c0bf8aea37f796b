"""Sample the statements the night reads, for labelling by the guideline in GUIDELINE.md.

Each item is one clause of a human turn as the night cuts it (engram.text.atomic: sentences_of, then
clauses of declarative_head), before any judgement of it, with its turn and the turn before as context.
Sources: BEAM 100K chats 1-10 (user turns) and LoCoMo dev (both speakers are people). The split is by
chat, fixed here: BEAM chats 1-5 and LoCoMo conv-26, conv-30 are `train`; BEAM 6-10 and the other LoCoMo
conversations `held` (the fitting script reports on `held` only).

The items hold the data's text, which stays in ../shared/data (its licences): they are written outside
the project, and the committed labels (labels/*.jsonl) name each item by its `key` only (source, turn id,
clause number), from which this script's output is rebuilt.

    python -m bench.fit.distil.sample_statements --per-chat 150 --out /tmp/distil_items.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from bench.quality.beam import chat_records
from engram.store.locomo import locomo_records
from engram.text.atomic import clauses, declarative_head, sentences_of

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
TRAIN_LOCOMO = {"conv-26", "conv-30"}
CONTEXT_CHARS = 600


def _cut(text: str, n: int = CONTEXT_CHARS) -> str:
    return text if len(text) <= n else text[:n] + " …"


def statements_of(records: list[dict[str, Any]], source: str, chat: str, split: str,
                  human_roles: set[str] | None) -> list[dict[str, Any]]:
    """Every clause of every human turn of one chat, with its context."""
    out = []
    for i, rec in enumerate(records):
        if human_roles is not None and rec["role"] not in human_roles:
            continue
        before = records[i - 1]["content"] if i > 0 and records[i - 1]["session_id"] == rec["session_id"] else ""
        parts = [c.strip() for s in sentences_of(rec["content"]) for c in clauses(declarative_head(s))]
        for number, clause in enumerate(parts):
            if clause:
                out.append({"key": f"{source}:{rec['id']}:{number}", "source": source, "chat": chat,
                            "split": split, "turn_id": str(rec["id"]),
                            "role": rec["role"], "statement": clause, "turn": _cut(rec["content"]),
                            "previous_turn": _cut(before)})
    return out


def sample(per_chat: int, seed: int) -> list[dict[str, Any]]:
    """per_chat statements drawn at random from each chat (fewer where a chat has fewer)."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for n in range(1, 11):
        recs = chat_records(DATA / "beam" / "100K" / str(n), f"beam{n}")
        pool = statements_of(recs, "beam", str(n), "train" if n <= 5 else "held", {"user"})
        items += rng.sample(pool, min(per_chat, len(pool)))
    recs = locomo_records(DATA / "locomo" / "locomo_dev.json")
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        by_conv.setdefault(str(r["user_id"]), []).append(r)
    for conv, rows in sorted(by_conv.items()):
        split = "train" if any(conv.endswith(c) for c in TRAIN_LOCOMO) else "held"
        pool = statements_of(rows, "locomo", conv, split, None)
        items += rng.sample(pool, min(per_chat, len(pool)))
    for k, item in enumerate(items):
        item["item"] = k
    return items


def read_labels() -> dict[str, dict[str, Any]]:
    """The committed labels (labels/*.jsonl), by item key."""
    labels: dict[str, dict[str, Any]] = {}
    for path in sorted((Path(__file__).resolve().parent / "labels").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                labels[row["key"]] = row
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-chat", type=int, default=120)
    parser.add_argument("--seed", type=int, default=58)
    parser.add_argument("--out", type=Path, required=True, help="items file (outside the project)")
    args = parser.parse_args()
    items = sample(args.per_chat, args.seed)
    with args.out.open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(items)} items -> {args.out}")


if __name__ == "__main__":
    main()
