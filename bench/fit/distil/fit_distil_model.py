"""Fit the night's "worth remembering" filter on labelled statements; report it on held-back chats.

Labels: bench/fit/distil/labels/*.jsonl (GUIDELINE.md, keyed by item), joined to the items that
sample_statements rebuilds from ../shared/data. The filter runs after the offline extraction
(engram.text.atomic), on the statements it keeps, as the night will see them: the rewritten text, its
MiniLM vector (stored with the fact anyway) and engram.consolidate.worth.surface_features. Model:
logistic regression (scikit-learn), standardised, balanced classes; its threshold keeps TARGET_RECALL
of the kept-worthy statements out of fold (grouped by chat) on the part it is fitted on.

Protocol: two folds by dev halves (train = BEAM 1-5 + LoCoMo conv-26/30, held = BEAM 6-10 +
conv-41/42/43): fit on one, report on the other, each source separately, against the rule alone. Then
the shipped model is fitted on all labels the same way and written to engram/resources/distil_keep.json.
Claim type (a multinomial model against engram.text.sentences.claim_type) is reported the same way.

    python -m bench.fit.distil.fit_distil_model
"""

from __future__ import annotations

import argparse
import json
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bench.fit.distil.sample_statements import DATA, read_labels, sample
from bench.quality.quality_data import load_spc
from engram.consolidate.worth import MODEL_PATH, surface_features
from engram.text.atomic import atomic_statements
from engram.text.sentences import claim_type

HERE = Path(__file__).resolve().parent
TYPES = ("fact", "preference", "instruction", "goal", "assumption")
C = 0.003
TARGET_RECALL = 0.9
SAID_AT = datetime(2024, 1, 1)
# Gold persona facts of Synthetic-Persona-Chat ("I love to bake cookies.", "I have two dogs."): short
# statements about a person, worth keeping by construction, which the project chats hold few of. They
# join every fitting part as labelled positives; half of them (by conversation) are held back to report
# how many such facts the filter keeps.
SPC_CHATS = 100


def persona_items(chats: int = SPC_CHATS) -> list[dict[str, Any]]:
    """Persona facts as labelled items (keep yes), split by conversation: even = fit, odd = report."""
    out = []
    for n, chat in enumerate(load_spc(DATA / "spc" / "Synthetic-Persona-Chat_valid.csv", limit=chats, seed=58)):
        for facts in chat.personas.values():
            for fact in facts:
                out.append({"key": f"spc:{chat.id}:{len(out)}", "source": "spc", "chat": chat.id, "role": "user",
                            "split": "fit" if n % 2 == 0 else "report", "statement": fact, "turn": fact,
                            "keep": "yes", "type": "fact", "reason": ""})
    return out


def labelled_items(per_chat: int = 150, seed: int = 58) -> list[dict[str, Any]]:
    """The items with a label, in item order."""
    labels = read_labels()
    return [{**item, **{k: labels[item["key"]][k] for k in ("keep", "type", "reason")}}
            for item in sample(per_chat, seed) if item["key"] in labels]


def night_statement(item: dict[str, Any]) -> str | None:
    """The statement the night's offline extraction makes of the item (None: the rule drops it)."""
    role = "user" if item["source"] == "beam" else item["role"]
    found = atomic_statements(item["statement"], role, SAID_AT)
    return found[0].text if found else None


def prf(truth: np.ndarray, guess: np.ndarray) -> tuple[float, float, float]:
    tp = float(np.sum(truth & guess))
    p = tp / max(float(np.sum(guess)), 1.0)
    r = tp / max(float(np.sum(truth)), 1.0)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _pipe() -> Any:
    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=5000, class_weight="balanced"))


def fit_with_threshold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, counted: np.ndarray) -> tuple[Any, float]:
    """The model fitted on (x, y) and the threshold that keeps TARGET_RECALL of the `counted` positives
    (the project chats' statements, not the persona facts) out of fold."""
    folds = GroupKFold(n_splits=min(len(set(groups.tolist())), 10))
    oof = cross_val_predict(_pipe(), x, y, groups=groups, cv=folds, method="predict_proba")[:, 1]
    positives = np.sort(oof[y & counted])
    threshold = float(positives[int((1 - TARGET_RECALL) * len(positives))])
    return _pipe().fit(x, y), threshold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "DISTIL_MODEL.md")
    parser.add_argument("--model-out", type=Path, default=MODEL_PATH)
    args = parser.parse_args()

    from engram import embed as embedders
    from engram.settings import load_settings

    items = labelled_items() + persona_items()
    texts = [night_statement(i) for i in items]
    rule = np.asarray([t is not None for t in texts])
    embedder = embedders.from_settings(load_settings(embedder="minilm"))
    shown = [t if t is not None else i["statement"] for i, t in zip(items, texts, strict=True)]
    vectors = np.asarray(embedder.embed(shown), np.float32)
    feats = np.asarray([surface_features(t, i["source"] == "beam", len(i["turn"])) for i, t in zip(items, shown, strict=True)],
                       np.float32)
    x = np.hstack([vectors, feats])
    keep = np.asarray([i["keep"] == "yes" for i in items])
    split = np.asarray([i["split"] for i in items])
    source = np.asarray([i["source"] for i in items])
    chat = np.asarray([f"{i['source']}:{i['chat']}" for i in items])
    types = np.asarray([i["type"] for i in items])
    project = source != "spc"
    rule_types = np.asarray([claim_type(t) for t in shown])

    rows, type_rows, persona_rows = [], [], []
    for fit_on, report_on in (("train", "held"), ("held", "train")):
        tr, te = ((split == fit_on) | (split == "fit")) & rule, split == report_on
        model, threshold = fit_with_threshold(x[tr], keep[tr], chat[tr], project[tr])
        final = rule & (model.predict_proba(x)[:, 1] >= threshold)
        held_personas = split == "report"
        persona_rows.append((fit_on, int(held_personas.sum()), float(rule[held_personas].mean()),
                             float(final[held_personas].mean())))
        kept = (split == fit_on) & keep
        type_model = make_pipeline(StandardScaler(), LogisticRegression(C=C * 10, max_iter=5000)).fit(x[kept], types[kept])
        type_guess = type_model.predict(x)
        for src in ("beam", "locomo", "both"):
            m = te & ((source == src) if src != "both" else True)
            rows.append((fit_on, report_on, src, int(m.sum()), int(keep[m].sum()), threshold,
                         prf(keep[m], final[m]), prf(keep[m], rule[m]), int(final[m].sum()), int(rule[m].sum()),
                         prf(~keep[m], ~final[m]), prf(~keep[m], ~rule[m])))
            mk = m & keep
            type_rows.append((fit_on, report_on, src, int(mk.sum()), float(np.mean(type_guess[mk] == types[mk])),
                              float(np.mean(rule_types[mk] == types[mk]))))

    model, threshold = fit_with_threshold(x[rule], keep[rule], chat[rule], project[rule])  # every label
    scaler, logistic = model.named_steps["standardscaler"], model.named_steps["logisticregression"]
    args.model_out.write_text(json.dumps({
        "fitted": f"{datetime.now(timezone.utc):%Y-%m-%d}", "command": "python -m bench.fit.distil.fit_distil_model",
        "labels": int(rule.sum()), "C": C, "target_recall": TARGET_RECALL,
        "embed_model": embedder.model, "embed_dim": embedder.dim, "threshold": round(threshold, 6),
        "intercept": round(float(logistic.intercept_[0]), 6),
        "mean": [float(v) for v in scaler.mean_], "scale": [float(v) for v in scaler.scale_],
        "coef": [float(v) for v in logistic.coef_[0]],
    }) + "\n", encoding="utf-8")

    counts = {t: int(np.sum(types[project] == t)) for t in TYPES}
    lines = [
        "# The distil filter: is a statement worth remembering (bench/fit/distil/fit_distil_model.py)", "",
        f"- date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, {platform.system()}",
        "- command: `python -m bench.fit.distil.fit_distil_model` (writes engram/resources/distil_keep.json)",
        f"- labels: {int(project.sum())} statements of the dev chats, 150 per chat (keep yes {int(keep[project].sum())}, no "
        f"{int((~keep[project]).sum())}; " + ", ".join(f"{t} {n}" for t, n in counts.items())
        + "), three annotators (one third each) by GUIDELINE.md; plus "
        f"{int((~project).sum())} gold persona facts of {SPC_CHATS} Synthetic-Persona-Chat conversations as positives "
        "(half of them, by conversation, in every fitting part; the other half only reported)",
        f"- the filter reads the statements the rule keeps ({int(rule.sum())}): the rewritten text's MiniLM vector + "
        f"{feats.shape[1]} surface features, standardised; logistic regression (L2, C={C}, balanced classes); "
        f"threshold: {TARGET_RECALL:.0%} of the worthy statements kept out of fold (GroupKFold by chat) on the "
        "part fitted on",
        "- folds by dev halves: train = BEAM 1-5 + LoCoMo conv-26/30, held = BEAM 6-10 + conv-41/42/43", "",
        "## Keep: the rule alone against the rule and the filter, on the half not fitted on", "",
        "| fit on | report on | source | items | worth keeping | threshold | rule + filter P / R / F1 | kept | "
        "rule alone P / R / F1 | kept | \"not a fact\" P / R, rule + filter | \"not a fact\" P / R, rule alone |",
        "|---|---|---|---:|---:|---:|---|---:|---|---:|---|---|",
    ]
    for fit_on, rep, src, n, k, t, m, r, nm, nr, nf, nr_ in rows:
        lines.append(f"| {fit_on} | {rep} | {src} | {n} | {k} | {t:.2f} | {m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} | "
                     f"{nm} | {r[0]:.3f} / {r[1]:.3f} / {r[2]:.3f} | {nr} | {nf[0]:.3f} / {nf[1]:.3f} | "
                     f"{nr_[0]:.3f} / {nr_[1]:.3f} |")
    lines += ["", "## Persona facts held back (Synthetic-Persona-Chat, the half never fitted on): share kept", "",
              "| folds fitted on | persona facts | rule alone | rule + filter |", "|---|---:|---:|---:|"]
    for fit_on, n, r, f in persona_rows:
        lines.append(f"| {fit_on} + persona half | {n} | {r:.3f} | {f:.3f} |")
    lines += [
        "", f"Shipped: fitted on all {int(rule.sum())} rule-kept statements, threshold {threshold:.3f} "
        f"(out of fold over all {len(set(chat.tolist()))} chats).", "",
        "## Claim type of the worthy statements: accuracy on the half not fitted on", "",
        "| fit on | report on | source | items | multinomial model | rule (engram.text.sentences.claim_type) |",
        "|---|---|---|---:|---:|---:|"]
    for fit_on, rep, src, n, acc, racc in type_rows:
        lines.append(f"| {fit_on} | {rep} | {src} | {n} | {acc:.3f} | {racc:.3f} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
