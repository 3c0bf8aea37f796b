"""Fit the "worth remembering" and claim-type judgements on labelled statements, report on held-back chats.

Labels: bench/fit/distil/labels/*.jsonl (by GUIDELINE.md, keyed by item), joined to the items that
sample_statements rebuilds from ../shared/data. Features: the MiniLM vector of the statement (the
embedder the night already runs) and a few surface features of it and its turn; models: logistic
regression (scikit-learn), standardised. Two folds by dev halves: fit on the train split (BEAM 1-5,
LoCoMo conv-26/30), report on the held split (BEAM 6-10, the other LoCoMo conversations), and the
reverse, each half and each source separately. The rule the night runs today (engram.text.atomic) is
scored on the same items.

    python -m bench.fit.distil.fit_distil_model --out bench/fit/distil/DISTIL_MODEL.md
"""

from __future__ import annotations

import argparse
import json
import platform
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from bench.fit.distil.sample_statements import sample
from engram.text.atomic import atomic_statements
from engram.text.sentences import claim_type

HERE = Path(__file__).resolve().parent
TYPES = ("fact", "preference", "instruction", "goal", "assumption")
_REQUEST = re.compile(r"\b(can|could|would) you\b|\bplease\b|\bhelp me\b|\bi need you\b|\blet me know\b", re.I)
_FIRST = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|we|our|us)\b", re.I)
_SECOND = re.compile(r"\b(you|your|you're)\b", re.I)
_LEADING_PRONOUN = re.compile(r"^\s*(it|this|that|these|those|they|there|he|she)\b", re.I)


def labelled_items(per_chat: int = 150, seed: int = 58) -> list[dict[str, Any]]:
    """The items with a label, in item order."""
    labels: dict[str, dict[str, Any]] = {}
    for path in sorted((HERE / "labels").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                labels[row["key"]] = row
    return [{**item, **{k: labels[item["key"]][k] for k in ("keep", "type", "reason")}}
            for item in sample(per_chat, seed) if item["key"] in labels]


def surface(item: dict[str, Any]) -> list[float]:
    """A few features the vector does not carry well: length, person, question, request, digits, names."""
    s = item["statement"]
    n = len(s.split())
    return [np.log1p(n), float(s.rstrip().endswith("?")), float(bool(_REQUEST.search(s))),
            float(bool(_FIRST.search(s))), float(bool(_SECOND.search(s))), float(bool(_LEADING_PRONOUN.match(s))),
            float(any(c.isdigit() for c in s)), float(sum(w[:1].isupper() for w in s.split()[1:]) > 0),
            float(item["source"] == "beam"), float(len(item["turn"]) > 500)]


def rule_keeps(item: dict[str, Any]) -> bool:
    """What the night keeps today: the clause yields a statement through engram.text.atomic."""
    role = "user" if item["source"] == "beam" else item["role"]
    return bool(atomic_statements(item["statement"], role, datetime(2024, 1, 1)))


def prf(truth: np.ndarray, guess: np.ndarray) -> tuple[float, float, float]:
    tp = float(np.sum(truth & guess))
    p = tp / max(float(np.sum(guess)), 1.0)
    r = tp / max(float(np.sum(truth)), 1.0)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "DISTIL_MODEL.md")
    parser.add_argument("--c", type=float, default=0.3, help="inverse L2 strength")
    args = parser.parse_args()

    from engram import embed as embedders
    from engram.settings import load_settings

    items = labelled_items()
    embedder = embedders.from_settings(load_settings(embedder="minilm"))
    vectors = np.asarray(embedder.embed([i["statement"] for i in items]), np.float32)
    x = np.hstack([vectors, np.asarray([surface(i) for i in items], np.float32)])
    keep = np.asarray([i["keep"] == "yes" for i in items])
    rule = np.asarray([rule_keeps(i) for i in items])
    split = np.asarray([i["split"] for i in items])
    source = np.asarray([i["source"] for i in items])

    rows, type_rows = [], []
    for fit_on, report_on in (("train", "held"), ("held", "train")):
        tr, te = split == fit_on, split == report_on
        scale = StandardScaler().fit(x[tr])
        model = LogisticRegression(C=args.c, max_iter=2000, class_weight="balanced").fit(scale.transform(x[tr]), keep[tr])
        guess = model.predict(scale.transform(x)).astype(bool)
        kept = tr & keep
        types = np.asarray([i["type"] for i in items])
        type_model = LogisticRegression(C=args.c, max_iter=2000).fit(scale.transform(x[kept]), types[kept])
        type_guess = type_model.predict(scale.transform(x))
        for src in ("beam", "locomo", "both"):
            m = te & ((source == src) if src != "both" else True)
            if not m.any():
                continue
            rows.append((fit_on, report_on, src, int(m.sum()), int(keep[m].sum()), prf(keep[m], guess[m]),
                         prf(keep[m], rule[m])))
            mk = m & keep
            rule_types = np.asarray([claim_type(i["statement"]) for i in items])
            type_rows.append((fit_on, report_on, src, int(mk.sum()), float(np.mean(type_guess[mk] == types[mk])),
                              float(np.mean(rule_types[mk] == types[mk]))))

    counts = {t: int(sum(i["type"] == t for i in items)) for t in TYPES}
    lines = [
        "# The distil model: worth remembering, and claim type (bench/fit/distil/fit_distil_model.py)", "",
        f"- date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, {platform.system()}",
        f"- command: `python -m bench.fit.distil.fit_distil_model --c {args.c}`",
        f"- labels: {len(items)} statements (keep yes {int(keep.sum())}, no {int((~keep).sum())}; "
        + ", ".join(f"{t} {n}" for t, n in counts.items()) + "), labelled by GUIDELINE.md",
        "- features: MiniLM vector of the statement + 10 surface features, standardised; logistic regression "
        f"(L2, C={args.c}, balanced classes); two folds by dev halves (train = BEAM 1-5 + LoCoMo conv-26/30, "
        "held = BEAM 6-10 + conv-41/42/43)", "",
        "## Keep (worth remembering): precision / recall / F1 on the part not fitted on", "",
        "| fit on | report on | source | items | keep yes | model P / R / F1 | rule today P / R / F1 |",
        "|---|---|---|---:|---:|---|---|",
    ]
    for fit_on, rep, src, n, k, m, r in rows:
        lines.append(f"| {fit_on} | {rep} | {src} | {n} | {k} | {m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} | "
                     f"{r[0]:.3f} / {r[1]:.3f} / {r[2]:.3f} |")
    lines += ["", "## Claim type of the kept statements: accuracy", "",
              "| fit on | report on | source | kept items | model | rule today (engram.text.sentences.claim_type) |",
              "|---|---|---|---:|---:|---:|"]
    for fit_on, rep, src, n, acc, racc in type_rows:
        lines.append(f"| {fit_on} | {rep} | {src} | {n} | {acc:.3f} | {racc:.3f} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
