"""The demo: sample data in, one nightly run, a short report and example searches out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engram import embed
from engram.consolidate.report import run_report_markdown
from engram.embed.queue import drain
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes, read_records

DEMO_USER = "demo"


def run_demo(
    settings: Settings,
    sample: Path,
    queries: Sequence[str],
    run_nightly: Callable[[str | None, Any, bool, list[str] | None], dict[str, Any]],
) -> dict[str, Any]:
    """Ingest `sample`, embed, consolidate once through `run_nightly`, then search; returns report lines."""
    numbers, records = read_records(sample)
    ingested = add_episodes(records, settings, line_numbers=numbers)
    embedder = embed.from_settings(settings)
    embedded = drain(settings, embedder, "episodes", DEMO_USER)
    result = run_nightly(DEMO_USER, None, False, None)
    from datetime import datetime

    lines = [
        f"ingested {ingested.inserted} episode(s) ({ingested.duplicates} already stored) into {settings.db_path}",
        f"embedded {embedded} episode(s) with {embedder.provider}/{embedder.model}",
        "",
        run_report_markdown(result["run_id"], datetime.fromisoformat(result["as_of"]), False, result["tenants"]),
    ]
    with db.open_store(settings) as con:
        facts = db.query(con, "queries/store/demo_top_facts", user_id=DEMO_USER, limit=10)
        lines.append("Top facts:")
        lines += [f"  {r['confidence']:.3f}  {r['text']}  ({r['evidence_count']} episodes) [{r['id']}]"
                  for r in facts.to_dicts()]
        pending = db.rows(con, "queries/consolidate/review_pending_all_kinds", user_id=DEMO_USER)
    waiting = Counter(r[1] for r in pending)
    if waiting:
        lines += ["", "Waiting for a decision (an LLM decides them; without one, you do): "
                  + ", ".join(f"{n} {kind} review(s)" for kind, n in sorted(waiting.items()))
                  + f": engram review list --user {DEMO_USER}"]
    searches = _searches(settings, queries)
    for query, hits in searches.items():
        lines += ["", f"search: {query}"]
        lines += [f"  {h['line']}" for h in hits] or ["  (no results)"]
    lines += ["", f"Explain a fact: engram explain <fact id> --user {DEMO_USER}"]
    if "snapshot_id" in (result.get("snapshot") or {}):
        lines.append(f"Ask the read snapshot: engram sql \"select text, confidence from current_facts where "
                     f"user_id = '{DEMO_USER}' order by confidence desc limit 5\"")
    return {"lines": lines, "run": result, "facts": facts.to_dicts(), "searches": searches,
            "waiting_reviews": dict(waiting)}


def _searches(settings: Settings, queries: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    from engram.query import search_memory
    from engram.query.render import hit_line

    out: dict[str, list[dict[str, Any]]] = {}
    for query in queries:
        hits = search_memory(query, user_id=DEMO_USER, limit=3, settings=settings)
        out[query] = [{"score": h.score, "relevance": h.relevance, "kind": h.table, "status": h.status,
                       "contested": h.contested, "text": h.text, "line": hit_line(h)} for h in hits]
    return out
