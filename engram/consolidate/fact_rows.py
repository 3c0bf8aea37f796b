"""A new fact's row, built from the episodes it rests on (the extract stage's statements and its digests)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from engram.consolidate.context import StageContext
from engram.consolidate.scoring import initial_confidence
from engram.embed.models import Embedder
from engram.text.normalize import content_hash
from engram.text.sentences import claim_type

VISIBILITY_RANK = {"private": 0, "project": 1, "global": 2}


def fact_row(ctx: StageContext, fact_id: str, text: str, members: list[int], cols: dict[str, list[Any]],
             vector: np.ndarray, embedder: Embedder, reason: str, kind: str | None = None,
             moment: datetime | None = None, quoted: list[int] | None = None) -> dict[str, Any]:
    """A new fact's row from its member episodes (`members`: rows of the episode columns `cols`, its
    evidence). `quoted`: rows the fact's text quotes without being evidence of it; the fact is as private
    as them too."""
    s = ctx.settings
    read = [*members, *(quoted or [])]
    visibility = min((cols["visibility"][i] for i in read), key=lambda v: VISIBILITY_RANK.get(v, 0))
    tags = sorted({t for i in read for t in (cols["tags"][i] or [])})
    said = min(cols["created_at"][i] for i in members)
    return {
        "id": fact_id, "user_id": ctx.user_id, "text": text, "claim_type": kind or claim_type(text),
        "category": "general",
        "confidence": initial_confidence(len(members), s.initial_confidence, s.support_gain),
        "confidence_at": ctx.as_of, "evidence_count": len(members), "status": "active",
        "asserted_at": said, "valid_from": moment or said,
        "created_at": ctx.as_of, "last_updated": ctx.as_of, "last_reinforced_at": ctx.as_of,
        "embedding": vector.astype(np.float32).tolist(), "embedding_model": embedder.model,
        "embedding_dim": embedder.dim, "content_hash": content_hash(text), "tags": tags,
        "visibility": visibility,
        "is_private": any(bool(cols["is_private"][i]) for i in read) or visibility == "private",
        "run_id": ctx.run_id, "reason": reason,
    }
