"""Stage 4, merge: facts that say the same thing become one, the loser pointing at the winner.

Reads the night's judged pairs (engram.consolidate.pairs) above merge_threshold with the facts'
confidence, category and evidence; decides connected components of pairs the merge rule accepted
and plans them (engram.consolidate.merge_plan: one category, no contradiction, a fact above
auto_merge_min_confidence); writes the merges (the highest confidence wins, lineage unioned, losers
status merged_into) and queues the rest for review.
"""

from __future__ import annotations

import polars as pl

from engram.consolidate import pairs
from engram.consolidate.context import (
    StageContext,
    StagePlan,
    new_review,
    queue_reviews,
    queued_pairs,
)
from engram.consolidate.merge_plan import FactInfo, components, plan_merges
from engram.consolidate.scoring import reinforced
from engram.embed.models import Embedder
from engram.store import db, fact_ops


def merge(ctx: StageContext, embedder: Embedder) -> StagePlan:
    """Merge near-duplicates among this run's new facts vs all active facts; ambiguous ones are queued."""
    s = ctx.settings
    pairs.ensure_stored(ctx, embedder)
    with ctx.open() as con:
        found = db.query(con, "queries/consolidate/run_fact_pairs", user_id=ctx.user_id, run_id=ctx.run_id,
                         as_of=ctx.as_of, rate=s.decay_rate)
        contradicted = queued_pairs(con, ctx.user_id, "contradiction")
        queued = queued_pairs(con, ctx.user_id, "merge")
    similar = found.filter(pl.col("similarity") > s.merge_threshold)
    conflicting = {frozenset((a, b)) for a, b in similar.filter(pl.col("conflict").is_not_null())
                   .select("fact_a", "fact_b").iter_rows()} | contradicted
    agree = [(a, b) for a, b, same in similar.select("fact_a", "fact_b", "same_statement").iter_rows()
             if same and frozenset((a, b)) not in conflicting]
    comps = components(agree)
    infos, evidence = _merging_facts(similar, {fid for comp in comps for fid in comp})
    plan = plan_merges(comps, infos, conflicting, s.auto_merge_min_confidence, {frozenset(pair) for pair in agree})
    reviews = [new_review(ctx, "merge", comp, why) for comp, why in plan.reviews if frozenset(comp) not in queued]
    counts = {"candidate_pairs": len(agree), "components": len(comps), "merges": len(plan.merges),
              "facts_merged": sum(len(losers) for _, losers in plan.merges), "queued": len(reviews)}

    def write(con: db.Connection) -> None:
        for winner, losers in plan.merges:
            gained = sum(evidence[x] for x in losers)
            new_conf = reinforced(infos[winner].confidence, gained, s.support_gain)
            fact_ops.merge(con, ctx.user_id, ctx.run_id, winner, losers,
                           f"auto-merge: {len(losers) + 1} near-duplicates (cos > {s.merge_threshold})",
                           ctx.as_of, winner_confidence=new_conf)
        queue_reviews(con, reviews)

    return StagePlan(counts, write)


def _merging_facts(similar: pl.DataFrame, merging: set[str]) -> tuple[dict[str, FactInfo], dict[str, int]]:
    """FactInfo and evidence count of the facts in a component: only they are planned (most active facts
    of a large store take part in no merge on a given night)."""
    infos: dict[str, FactInfo] = {}
    evidence: dict[str, int] = {}
    ids = list(merging)
    for r in similar.filter(pl.col("fact_a").is_in(ids) | pl.col("fact_b").is_in(ids)).iter_rows(named=True):
        for side in ("a", "b"):
            fid = r[f"fact_{side}"]
            infos[fid] = FactInfo(fid, r[f"confidence_{side}"], r[f"category_{side}"],
                                  int(r[f"created_{side}"].timestamp() * 1e6))
            evidence[fid] = r[f"evidence_{side}"]
    return infos, evidence
