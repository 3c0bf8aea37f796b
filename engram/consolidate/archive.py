"""Stage 7, archive: retired rows past retention go to verified parquet, then leave the live tables."""

from __future__ import annotations

from engram.archive.nightly import archive_due
from engram.consolidate.context import StageContext, StagePlan


def archive(ctx: StageContext) -> StagePlan:
    """Export, verify by reading back, then finalize (engram.archive.nightly.archive_due writes in its own steps)."""
    return StagePlan(dict(archive_due(ctx.settings, ctx.user_id, ctx.as_of, ctx.run_id)))
