"""Stage 1, embed: drain the tenant's embedding queue (episodes, then facts) before anything reads vectors."""

from __future__ import annotations

from engram.consolidate.context import StageContext, StagePlan
from engram.embed.models import Embedder
from engram.embed.queue import drain


def embed_pending(ctx: StageContext, embedder: Embedder) -> StagePlan:
    """Embed every pending episode and fact of the tenant (the queue writes in its own short transactions)."""
    return StagePlan({
        "episodes": drain(ctx.settings, embedder, "episodes", ctx.user_id),
        "facts": drain(ctx.settings, embedder, "facts", ctx.user_id),
    })
