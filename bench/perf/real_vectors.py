"""Real sentence embeddings for index benchmarks: the dev data sets' sentences through the MiniLM embedder.

    python -m bench.perf.real_vectors [--out /tmp/engram-bench/sentences.npz]

Every distinct sentence of ../shared/data (LoCoMo turns and observations, MSRP, SICK, MultiNLI,
SituatedQA questions, Synthetic-Persona-Chat personas and turns) is embedded once and cached
(texts + float32 vectors) outside the repository. `filled(n)` grows them to n rows with noised
copies (a copy = a real vector plus Gaussian noise, renormalised, and its text with a few words
dropped), so a 1M-row index still has real sentence geometry around every query.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CACHE = Path("/tmp/engram-bench/sentences.npz")
NOISE = 0.25   # noise norm relative to the unit vector: copies sit at cos ~0.97 of their source


def sentences(data: Path = DATA) -> list[str]:
    """Distinct non-empty sentences of the dev data sets, in a fixed order."""
    out: list[str] = []
    loc = json.loads((data / "locomo" / "locomo_dev.json").read_text())
    for sample in loc:
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                out += [t.get("text", "") for t in turns]
        for obs in (sample.get("observation") or {}).values():
            for items in (obs or {}).values():
                out += [o[0] for o in items if isinstance(o, list) and o]
    for name in ("msr-para-train.tsv", "msr-para-val.tsv"):
        with open(data / "msrp" / name, encoding="utf-8-sig") as fh:
            for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
                out += [row["#1 String"], row["#2 String"]]
    for name in ("SICK_train.txt", "SICK_trial.txt"):
        with open(data / "sick2014" / name, encoding="utf-8") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                out += [row["sentence_A"], row["sentence_B"]]
    with open(data / "nli" / "mnli_dev_matched_binary_42.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            out += [row["sentence1"], row["sentence2"]]
    for line in (data / "situatedqa" / "qa_data_temp.dev.jsonl").read_text().splitlines():
        if line.strip():
            out.append(json.loads(line)["question"])
    with open(data / "spc" / "Synthetic-Persona-Chat_valid.csv", encoding="utf-8") as fh:
        for row in csv.reader(fh):
            for cell in row:
                out += [re.sub(r"^User \d: ", "", s) for s in cell.splitlines()]
    seen: set[str] = set()
    uniq = []
    for s in out:
        s = " ".join(str(s).split())
        if len(s) > 3 and s not in seen and s != "user 1 personas":
            seen.add(s)
            uniq.append(s)
    return uniq


def load(path: Path = CACHE) -> tuple[list[str], np.ndarray]:
    """(texts, unit float32 vectors) from the cache (built with main())."""
    z = np.load(path, allow_pickle=False)
    return [str(t) for t in z["texts"]], z["vectors"]


def held_out(size: int, n_queries: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """(texts, vectors) of `size` rows filled from the real sentences, and (texts, vectors) of
    `n_queries` real sentences kept out of them as queries; the same split in every bench."""
    texts, vecs = load()
    hold = np.random.default_rng(1).permutation(len(texts))
    q_idx, keep = hold[:n_queries], np.sort(hold[n_queries:])
    base_t, base_v = filled([texts[i] for i in keep], vecs[keep], size)
    return base_t, base_v, [texts[i] for i in q_idx], vecs[q_idx]


def filled(texts: list[str], vectors: np.ndarray, n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """n rows: the real ones first, then noised copies of random real ones."""
    rng = np.random.default_rng(seed)
    base = min(n, len(texts))
    out_t = list(texts[:base])
    out_v = np.empty((n, vectors.shape[1]), dtype=np.float32)
    out_v[:base] = vectors[:base]
    for start in range(base, n, 100_000):
        m = min(100_000, n - start)
        src = rng.integers(0, len(texts), m)
        v = vectors[src] + (NOISE / np.sqrt(vectors.shape[1])) * rng.normal(size=(m, vectors.shape[1])).astype(np.float32)
        out_v[start:start + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
        drop = rng.integers(0, 8, m)
        for s, d in zip(src.tolist(), drop.tolist(), strict=True):
            words = texts[s].split()
            if len(words) > 3:
                words = words[:d % len(words)] + words[d % len(words) + 1:]
            out_t.append(" ".join(words))
    return out_t, out_v


def main() -> None:
    """Embed the dev sentences and cache them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CACHE)
    args = parser.parse_args()
    from engram import embed as embedders
    from engram.settings import load_settings

    texts = sentences()
    embedder = embedders.from_settings(load_settings(embedder="minilm", llm="none"))
    t = time.perf_counter()
    vecs = np.vstack([embedder.embed(texts[i:i + 2048]) for i in range(0, len(texts), 2048)]).astype(np.float32)
    secs = time.perf_counter() - t
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, texts=np.array(texts), vectors=vecs)
    print(f"{len(texts)} sentences embedded in {secs:.1f} s ({len(texts) / secs:.0f}/s) -> {args.out}")


if __name__ == "__main__":
    main()
