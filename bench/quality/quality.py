"""Quality evaluation on real data: retrieval, dedupe, contradiction, knowledge update, extraction, BEAM.

    python -m bench.quality.quality [--data ../shared/data] [--out bench/quality/] [--quick] [--decay-rates 0 0.001 0.002]

Writes <out>/QUALITY.md, <out>/quality.json and <out>/quality_*.png (plots need the `bench`
extra: matplotlib). Offline, no LLM unless --llm asks for one. Every dataset path can be overridden, so unseen splits of
the same sources run unchanged; thresholds are only ever chosen on train splits.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.quality.quality_embed import CachedEmbedder, default_cache_dir

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
DEFAULT_FILES = {
    "locomo": "locomo/locomo_dev.json",
    "msrp_train": "msrp/msr-para-train.tsv", "msrp_dev": "msrp/msr-para-val.tsv",
    "sick_train": "sick2014/SICK_train.txt", "sick_dev": "sick2014/SICK_trial.txt",
    "nli": "nli/mnli_dev_matched_binary_42.csv",
    "situatedqa": "situatedqa/qa_data_temp.dev.jsonl",
    "spc": "spc/Synthetic-Persona-Chat_valid.csv",
    "beam": "beam/100K",  # a folder of numbered chats (bench/quality/beam.py)
}
EVALUATIONS = ("retrieval", "dedupe", "contradiction", "knowledge_update", "extraction", "beam")
# decay rates (per day) the LoCoMo nightly replay is repeated at; the configured rate is always added
DECAY_RATES = (0.0, 0.002, 0.005, 0.01)  # each replay costs about a minute


@dataclass
class Sizes:
    """How much of each dataset a run uses (None = all), and the decay rates the nightly replay sweeps."""

    locomo_questions: int | None = None
    locomo_conversations: int | None = None
    pair_train: int | None = None
    nli_pairs: int | None = None
    situatedqa_questions: int | None = None
    spc_conversations: int = 150
    beam_chats: int | None = None  # the first this many chats of the BEAM folder (None: every chat)
    decay_rates: tuple[float, ...] = DECAY_RATES
    notes: list[str] = field(default_factory=list)


FULL = Sizes()
QUICK = Sizes(locomo_questions=120, locomo_conversations=1, pair_train=600, nli_pairs=400,
              situatedqa_questions=60, spc_conversations=15, beam_chats=1, decay_rates=())  # the configured rate only


def resolve_paths(data: Path, overrides: dict[str, Path | None]) -> dict[str, Path]:
    """Default file names under `data`, each overridable."""
    return {k: Path(overrides.get(k) or data / v) for k, v in DEFAULT_FILES.items()}


def make_embedder(name: str, cache: bool) -> CachedEmbedder:
    """The evaluation embedder (minilm by default), cached under the system temp dir."""
    from engram import embed
    from engram.settings import load_settings

    inner = embed.from_settings(load_settings(embedder=name, llm="none"))
    return CachedEmbedder(inner, default_cache_dir(inner.model) if cache else None)


def run(paths: dict[str, Path], sizes: Sizes, embedder_name: str = "minilm", cache: bool = True,
        only: tuple[str, ...] = EVALUATIONS, progress: Any = print, llm: str = "none") -> dict[str, Any]:
    """Every chosen evaluation; the result dict that QUALITY.md and quality.json are written from."""
    from bench.quality import (
        quality_contradiction,
        quality_dedupe,
        quality_extraction,
        quality_knowledge_update,
        quality_retrieval,
    )
    from engram.settings import load_settings

    missing = [str(p) for k, p in paths.items() if _needed(k, only) and not p.exists()]
    if missing:
        from engram.errors import InvalidInput

        raise InvalidInput(f"data: missing file(s) {missing}")
    settings = load_settings(llm=llm)
    emb = make_embedder(embedder_name, cache)
    as_of = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    out: dict[str, Any] = {
        "settings": {k: getattr(settings, k) for k in (
            "merge_threshold", "support_threshold", "contradiction_threshold", "min_cluster_size", "pca_dims",
            "cluster_min_similarity", "initial_confidence", "support_gain", "decay_rate", "deprecate_below",
            "auto_merge_min_confidence")},
        "embedder": f"{emb.provider}/{emb.model}", "llm": llm if llm == "none" else f"{llm}/{settings.llm_model}",
        "paths": {k: str(p) for k, p in paths.items()},
        "sizes": {k: v for k, v in sizes.__dict__.items() if k != "notes"}, "timings": {},
    }
    s = out["settings"]

    def timed(name: str, fn: Any) -> Any:
        progress(f"[quality] {name} ...")
        t0 = time.perf_counter()
        value = fn()
        out["timings"][name] = round(time.perf_counter() - t0, 1)
        progress(f"[quality] {name} done in {out['timings'][name]} s")
        return value

    if "retrieval" in only or "extraction" in only:
        retrieval, store = timed("retrieval", lambda: quality_retrieval.run(
            emb, paths["locomo"], as_of, sizes.locomo_questions, sizes.locomo_conversations,
            decay_rates=sizes.decay_rates, llm=llm))
        try:
            if "retrieval" in only:
                out["retrieval"] = retrieval
            if "extraction" in only:
                users = sorted(retrieval["stage_counts"])
                out["extraction"] = {"locomo": timed("extraction_locomo", lambda: quality_extraction.run_locomo(
                    emb, store, paths["locomo"], users))}
        finally:
            store.close()
    if "dedupe" in only:
        out["dedupe"] = timed("dedupe", lambda: quality_dedupe.run(
            emb, paths["msrp_train"], paths["msrp_dev"], paths["sick_train"], paths["sick_dev"],
            s["merge_threshold"], s["support_threshold"], sizes.pair_train))
    if "contradiction" in only:
        out["contradiction"] = timed("contradiction", lambda: quality_contradiction.run(
            emb, paths["sick_train"], paths["sick_dev"], paths["nli"], s["contradiction_threshold"],
            s["support_threshold"], sizes.pair_train, sizes.nli_pairs, paths["locomo"], sizes.locomo_conversations))
    if "knowledge_update" in only:
        out["knowledge_update"] = timed("knowledge_update", lambda: quality_knowledge_update.run(
            emb, paths["situatedqa"], as_of, sizes.situatedqa_questions, llm=llm))
    if "extraction" in only:
        out.setdefault("extraction", {})["spc"] = timed("extraction_spc", lambda: quality_extraction.run_spc(
            emb, paths["spc"], as_of, sizes.spc_conversations, llm=llm))
    if "beam" in only:
        from bench.quality import beam

        chats = beam.chat_numbers(paths["beam"])[:sizes.beam_chats]
        if not chats:
            from engram.errors import InvalidInput

            raise InvalidInput(f"beam: no numbered chat folder in {paths['beam']}")
        groups = ";".join([*(f"{a}-{b}:chats {a}-{b}" for a, b in _halves(chats)), f"{chats[0]}-{chats[-1]}:all"])
        out["beam"] = timed("beam", lambda: beam.evaluate(
            paths["beam"], chats, groups, embedder_name, paths["locomo"] if sizes.beam_chats is None else None,
            progress=progress))
    out["embedding"] = {"texts_embedded": emb.embedded, "embed_s": round(emb.seconds, 1),
                        "cache_dir": str(emb.cache_dir) if emb.cache_dir else None}
    return out


def _halves(chats: list[int]) -> list[tuple[int, int]]:
    """The first and second half of the chat numbers, as (first, last) ranges (one range for one chat)."""
    if len(chats) < 2:
        return []
    mid = (len(chats) + 1) // 2
    return [(chats[0], chats[mid - 1]), (chats[mid], chats[-1])]


def _needed(key: str, only: tuple[str, ...]) -> bool:
    uses = {"locomo": ("retrieval", "extraction", "contradiction", "beam"), "beam": ("beam",), "msrp_train": ("dedupe",), "msrp_dev": ("dedupe",),
            "sick_train": ("dedupe", "contradiction"), "sick_dev": ("dedupe", "contradiction"),
            "nli": ("contradiction",), "situatedqa": ("knowledge_update",), "spc": ("extraction",)}
    return any(e in only for e in uses[key])


def _clean(value: Any) -> Any:
    """JSON-safe: NaN -> None, paths/datetimes -> str."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return str(value)


def write(result: dict[str, Any], out_dir: Path, quick: bool, started: float) -> dict[str, Path]:
    """QUALITY.md, quality.json and the plots into out_dir."""
    from bench.quality.quality_plots import write_plots
    from bench.quality.quality_report import render

    out_dir.mkdir(parents=True, exist_ok=True)
    result["machine"] = {"platform": f"{platform.machine()} {platform.system()} {platform.release()}",
                         "cores": os.cpu_count(), "python": platform.python_version(),
                         "load_average_end": round(os.getloadavg()[0], 2)}
    result["date"] = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    result["quick"] = quick
    result["wall_s"] = round(time.perf_counter() - started, 1)
    result["plots"] = write_plots(result, out_dir)
    (out_dir / "quality.json").write_text(json.dumps(_clean(result), indent=1) + "\n")
    (out_dir / "QUALITY.md").write_text(render(result))
    return {"report": out_dir / "QUALITY.md", "json": out_dir / "quality.json"}


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run, write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="Root of the evaluation data.")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="Report directory.")
    parser.add_argument("--quick", action="store_true", help="Small samples (tests, smoke runs).")
    parser.add_argument("--embedder", default="minilm", choices=["minilm", "hash"])
    parser.add_argument("--no-cache", action="store_true", help="Do not cache embeddings in the temp dir.")
    parser.add_argument("--llm", default="none", choices=["none", "fake", "gemini"],
                        help="LLM of the nightly stages (extraction, resolve): none (extractive, the default), fake "
                             "(deterministic rules, shows the path works), gemini (needs ENGRAM_GEMINI_API_KEY).")
    parser.add_argument("--only", nargs="+", choices=EVALUATIONS, default=list(EVALUATIONS))
    parser.add_argument("--decay-rates", nargs="+", type=float, default=None, metavar="RATE",
                        help=f"Decay rates for the nightly replay sweep (default {' '.join(map(str, DECAY_RATES))}; "
                             "--quick: the configured rate only). The configured rate is always included.")
    for key in DEFAULT_FILES:
        parser.add_argument(f"--{key.replace('_', '-')}", type=Path, default=None,
                            help=f"Override <data>/{DEFAULT_FILES[key]}.")
    args = parser.parse_args(argv)
    if args.decay_rates is not None and not all(0.0 <= r <= 1.0 for r in args.decay_rates):
        parser.error(f"--decay-rates: each rate must be within [0, 1], got {args.decay_rates}")
    started = time.perf_counter()
    paths = resolve_paths(args.data, {k: getattr(args, k) for k in DEFAULT_FILES})
    sizes = QUICK if args.quick else FULL
    if args.decay_rates is not None:
        sizes = replace(sizes, decay_rates=tuple(args.decay_rates))
    result = run(paths, sizes, args.embedder, not args.no_cache, tuple(args.only), llm=args.llm)
    result["command"] = " ".join(["python -m bench.quality.quality", *(argv if argv is not None else sys.argv[1:])])
    files = write(result, args.out, args.quick, started)
    print(f"[quality] wrote {files['report']} and {files['json']} in {result['wall_s']} s")


if __name__ == "__main__":
    main()
