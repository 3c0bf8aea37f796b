"""Stage 6, deprecate: facts whose decayed confidence fell below the floor are kept but no longer retrieved
(instructions and preferences hold until revoked or replaced: they never decay out)."""

from __future__ import annotations

from engram.consolidate.context import StageContext, StagePlan
from engram.store import db, fact_ops
from engram.text.sentences import LASTING_CLAIMS


def deprecate(ctx: StageContext) -> StagePlan:
    """Reads the active facts below deprecate_below at as_of; writes status deprecated with a fact_events row."""
    s = ctx.settings
    with ctx.open() as con:
        due = db.rows(con, "queries/consolidate/deprecation_candidates", user_id=ctx.user_id, as_of=ctx.as_of,
                      rate=s.decay_rate, threshold=s.deprecate_below, lasting=list(LASTING_CLAIMS))
    changes = [fact_ops.FactChange(fid, "deprecated", f"confidence {c:.3f} < {s.deprecate_below}",
                                   confidence=float(c), status="deprecated")
               for fid, c in due]
    return StagePlan({"deprecated": len(changes)},
                     lambda con: fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, changes, ctx.as_of))
