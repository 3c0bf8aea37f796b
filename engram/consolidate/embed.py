"""Stage 1, embed: fold the tenant's inbox, then drain its embedding queue (episodes, then facts) before
anything reads vectors."""

from __future__ import annotations

from engram.consolidate.context import StageContext, StagePlan
from engram.embed.models import Embedder
from engram.embed.queue import drain_tables
from engram.store.fold import fold_tenants


def embed_pending(ctx: StageContext, embedder: Embedder) -> StagePlan:
    """Fold the episodes written to the inbox while the store was held, then embed every pending episode
    and fact of the tenant (the queue writes in its own short transactions)."""
    with ctx.open() as con:
        folded = fold_tenants(con, ctx.settings, [ctx.user_id], (embedder.model, embedder.dim))
    return StagePlan({"inbox_rows": folded.inserted,
                      **drain_tables(ctx.settings, embedder, ("episodes", "facts"), ctx.user_id)})
