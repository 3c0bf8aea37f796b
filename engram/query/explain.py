"""Explain a fact: its row, full audit trail, provenance and merge lineage."""

from __future__ import annotations

from typing import Any

from engram.archive.lookup import archived_facts
from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store import db
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id
from engram.text.terminal import safe

FACT_FIELDS = ("id", "text", "claim_type", "category", "status", "confidence", "confidence_at", "evidence_count",
               "merged_into_id", "asserted_at", "valid_from", "valid_to", "created_at", "last_updated",
               "last_reinforced_at", "visibility", "is_private", "embedding_model", "run_id")  # explain_fact's


def explain_fact(settings: Settings, user_id: str, fact_id: str, read_only: bool = False) -> dict[str, Any]:
    """Everything that explains the fact's current text, confidence and status."""
    user_id = normalise_user_id(user_id)
    with db.open_store(for_tenant(settings, user_id), read_only=read_only) as con:
        fact = db.query(con, "queries/query/explain_fact", user_id=user_id, fact_id=fact_id).to_dicts()
        archived = None
        if not fact:
            archived = _archived(con, settings, user_id, fact_id)
            fact = [archived.pop("fact")]
        return {
            "fact": fact[0],
            "archived": archived,
            "events": db.query(con, "queries/query/explain_fact_events", user_id=user_id, fact_id=fact_id).to_dicts(),
            "sources": db.query(con, "queries/query/explain_fact_sources", user_id=user_id, fact_id=fact_id).to_dicts(),
            "merged_in": db.query(con, "queries/query/facts_merged_into", user_id=user_id, fact_id=fact_id).to_dicts(),
        }


def _archived(con: db.Connection, settings: Settings, user_id: str, fact_id: str) -> dict[str, Any]:
    """An archived fact as explain shows it: its archived row, when and by which run, how to restore it."""
    found = archived_facts(con, settings, user_id, [fact_id]).get(fact_id)
    if found is None:
        raise InvalidInput(f"fact_id: unknown fact {fact_id!r} for tenant {user_id!r} (not live, not archived)")
    row = found.row or {}
    fact = {name: row.get(name) for name in FACT_FIELDS} | {"id": fact_id, "status": "archived"}
    if row.get("is_private"):
        fact["text"] = "(private)"
    elif found.row is None:
        fact["text"] = "(archived; its file cannot be read)"
    return {"fact": fact, "status_before": row.get("status"), "archived_at": found.archived_at,
            "archive_run_id": found.archive_run_id, "restore": found.restore_command(user_id)}


def _when(value: Any) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M}"


def _conf(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_explanation(info: dict[str, Any], width: int = 70) -> list[str]:
    """Human-readable lines for `engram explain`: the fact, its history as a table in time order, its sources."""
    from engram.text.terminal import table_lines

    f = info["fact"]
    lines = [
        (f"fact {f['id']}  [{f['status']}]  confidence {_conf(f['confidence'])} (as of {_when(f['confidence_at'])})  "
         f"evidence {f['evidence_count'] if f['evidence_count'] is not None else '-'}  "
         f"{f['claim_type'] or '-'}/{f['category'] or '-'}"),
        f"  {safe(f['text'])}",
    ]
    a = info.get("archived")
    if a:
        lines.append(f"  archived on {_when(a['archived_at'])} by run {a['archive_run_id']} (it was "
                     f"{a['status_before'] or 'retired'}); its sources went with it. Restore it with: {a['restore']}")
    if f["merged_into_id"]:
        lines.append(f"  merged into {f['merged_into_id']}")
    lines += ["", "history (oldest first):"]
    history = []
    for e in info["events"]:  # already in time order (fact_events.seq)
        status = e["status_after"] if e["status_before"] in (None, e["status_after"]) \
            else f"{e['status_before']} -> {e['status_after']}"
        reason = e["reason"] or ""
        if e["related_fact_id"]:
            reason = f"{reason} (with {e['related_fact_id']})"
        history.append((_when(e["created_at"]), e["action"],
                        f"{_conf(e['confidence_before'])} -> {_conf(e['confidence_after'])}", status, reason,
                        e["run_id"]))
    lines += ["  " + ln for ln in table_lines(["when", "event", "confidence", "status", "reason", "run"],
                                              history, width)]
    lines += ["", "sources:"]
    sources = []
    for s in info["sources"]:
        text = "(private)" if s["is_private"] else (s["content"] or "(archived)")
        sim = "-" if s["similarity"] is None else f"{s['similarity']:.2f}"
        sources.append((s["relation"], _when(s["created_at"]), s["episode_id"], sim, text))
    lines += ["  " + ln for ln in table_lines(["relation", "said at", "episode", "similarity", "text"],
                                              sources, width)]
    for m in info["merged_in"]:
        lines.append(f"merged in: {m['id']} ({m['confidence']:.3f}) {safe(m['text'][:100])}")
    return lines
