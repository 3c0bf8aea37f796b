"""Stage 8, publish: embed facts whose text changed, write the tenant's search indexes, gather the run's changes."""

from __future__ import annotations

from typing import Any

from engram.archive.lookup import archived_facts
from engram.consolidate.context import StageContext, StagePlan
from engram.embed.models import Embedder
from engram.embed.queue import drain
from engram.index.writer import write_tenant
from engram.store import db, inbox


def publish(ctx: StageContext, embedder: Embedder) -> StagePlan:
    """The index files are written to new names and switched atomically; the changes feed the run report."""
    embedded = drain(ctx.settings, embedder, "facts", ctx.user_id)
    covered = inbox.folded_stems(ctx.settings, ctx.user_id)  # listed before the index reads the store
    with ctx.open() as con:
        changes = with_archived_text(
            con, ctx, db.query(con, "queries/consolidate/run_fact_changes", user_id=ctx.user_id, run_id=ctx.run_id)
            .to_dicts())
        indexes = (write_tenant(ctx.settings, con, ctx.user_id, embedder.model, embedder.dim, ctx.run_id)
                   if ctx.settings.search_index else {})
    # readers find these rows in the new generation now (without indexes nothing reads them back)
    if indexes.get("episodes", {}).get("written") or not ctx.settings.search_index:
        indexes["inbox_segments_removed"] = inbox.remove(ctx.settings, ctx.user_id, covered)
    return StagePlan({"facts_embedded": embedded, "fact_changes": len(changes), "indexes": indexes},
                     changes=changes)


def with_archived_text(con: db.Connection, ctx: StageContext, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Changes of facts that left the live table (archived by this run) take their text from the archive."""
    gone = {c["fact_id"] for c in changes if c["text"] is None}
    found = archived_facts(con, ctx.settings, ctx.user_id, gone)
    for c in changes:
        if c["text"] is None and c["fact_id"] in found:
            c["text"] = found[c["fact_id"]].shown_text
    return changes
