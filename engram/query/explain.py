"""Explain a fact: its row, full audit trail, provenance and merge lineage."""

from __future__ import annotations

from typing import Any

from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store import db
from engram.text.terminal import safe


def explain_fact(settings: Settings, user_id: str, fact_id: str, read_only: bool = False) -> dict[str, Any]:
    """Everything that explains the fact's current text, confidence and status."""
    with db.open_store(settings, read_only=read_only) as con:
        fact = db.query(con, "queries/explain_fact", user_id=user_id, fact_id=fact_id)
        if fact.height == 0:
            raise InvalidInput(f"fact_id: unknown fact {fact_id!r} for tenant {user_id!r}")
        return {
            "fact": fact.to_dicts()[0],
            "events": db.query(con, "queries/explain_fact_events", user_id=user_id, fact_id=fact_id).to_dicts(),
            "sources": db.query(con, "queries/explain_fact_sources", user_id=user_id, fact_id=fact_id).to_dicts(),
            "merged_in": db.query(con, "queries/facts_merged_into", user_id=user_id, fact_id=fact_id).to_dicts(),
        }


def format_explanation(info: dict[str, Any]) -> list[str]:
    """Human-readable lines for `engram explain`."""
    f = info["fact"]
    lines = [
        f"fact {f['id']} [{f['status']}] confidence {f['confidence']:.4f} at {f['confidence_at']} "
        f"(evidence {f['evidence_count']}, {f['claim_type']}/{f['category']})",
        f"  {safe(f['text'])}",
    ]
    if f["merged_into_id"]:
        lines.append(f"  merged into {f['merged_into_id']}")
    lines.append("history:")
    for e in info["events"]:
        before = "-" if e["confidence_before"] is None else f"{e['confidence_before']:.4f}"
        after = "-" if e["confidence_after"] is None else f"{e['confidence_after']:.4f}"
        related = f" (with {e['related_fact_id']})" if e["related_fact_id"] else ""
        lines.append(f"  {e['created_at']} {e['action']:12} {before} -> {after} "
                     f"{e['status_before'] or '-'} -> {e['status_after']}{related}: {e['reason']} [{e['run_id']}]")
    lines.append("sources:")
    for s in info["sources"]:
        text = "(private)" if s["is_private"] else safe((s["content"] or "(archived)")[:120])
        lines.append(f"  {s['relation']:14} {s['episode_id']} {s['created_at']} sim {s['similarity']:.3f}: {text}")
    for m in info["merged_in"]:
        lines.append(f"merged in: {m['id']} ({m['confidence']:.4f}) {safe(m['text'][:100])}")
    return lines
