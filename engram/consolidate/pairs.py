"""The night's pair search: this run's new facts against every active fact, once, for two stages.

The confidence stage takes the pairs whose texts contradict (a contradiction or an update); the merge
stage takes those above merge_threshold that the merge rule judged to say the same thing. The search
runs once, in the confidence stage, which stores the judged pairs (run_fact_pairs) with its write, so
the merge stage of this run, or of a resumed one, reads them; when the confidence stage did not run
this run (stages chosen by hand), the merge stage searches them itself (ensure_stored).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from engram.arrays import unique_sorted
from engram.consolidate import fact_keys, merge_screen, pair_rules, rule_pool
from engram.consolidate.context import StageContext, fact_texts
from engram.consolidate.neighbours import FactSpace, load_facts
from engram.decay import decayed_array
from engram.embed.models import Embedder
from engram.store import db
from engram.store.runs import completed_counts

PAIR_SCHEMA = {"fact_a": pl.String, "fact_b": pl.String, "similarity": pl.Float64, "conflict": pl.String,
               "same_statement": pl.Boolean}


@dataclass
class ActiveFacts:
    """The tenant's active facts (with each one's valence code), their vectors and their confidence at as_of."""

    frame: pl.DataFrame
    space: FactSpace
    confidence: np.ndarray


@dataclass
class NightPairs:
    """Similar pairs (fact_a < fact_b, similarity, conflict reason or null) and, from `judged()`, the same
    pairs with the merge rule's verdict (same_statement) on each pair above merge_threshold.

    The merge rule runs in workers while the caller goes on; call `judged()` exactly once, also when the
    caller fails meanwhile (rule_pool.start).
    """

    pairs: pl.DataFrame
    judged: Callable[[], pl.DataFrame]

    def conflicting(self) -> pl.DataFrame:
        """The pairs the contradiction rule named a reason for."""
        return self.pairs.filter(pl.col("conflict").is_not_null())


def active_facts(ctx: StageContext, embedder: Embedder) -> ActiveFacts:
    """Active facts of the tenant (with each one's valence code: the facts are keyed first), their vectors
    (through the published index when there is one), and their confidence decayed to as_of."""
    with ctx.open() as con:
        fact_keys.refresh(con, ctx.user_id)
        arrow, vecs = load_facts(ctx.settings, con, ctx.user_id, embedder.model, embedder.dim)
    facts = pl.from_arrow(arrow)
    if facts.height == 0:
        return ActiveFacts(facts, vecs, np.zeros(0))
    as_of = np.datetime64(ctx.as_of.replace(tzinfo=None), "us")
    ages = (as_of - facts["confidence_at"].to_numpy().astype("datetime64[us]")) / np.timedelta64(1, "D")
    return ActiveFacts(facts, vecs, decayed_array(facts["confidence"].to_numpy(), ages, ctx.settings.decay_rate))


def valence_codes(ctx: StageContext, facts: pl.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Valence codes (pair_rules.valence_code) of the facts at frame rows: as stored with their keys, or
    coded here for a fact not keyed yet."""
    codes = facts["valence_code"].gather(rows)
    if codes.null_count():
        unknown = np.flatnonzero(codes.is_null().to_numpy())
        ids = facts["id"].gather(rows[unknown]).to_list()
        with ctx.open() as con:
            texts = fact_texts(con, ctx.user_id, ids)
        codes = codes.scatter(unknown, [pair_rules.valence_code(texts[fid]) for fid in ids])
    return codes.to_numpy().astype(np.int64)


def ids_of_rows(facts: pl.DataFrame, rows: np.ndarray) -> dict[int, str]:
    """{frame row: fact id} of the given rows (each read once)."""
    distinct = unique_sorted(rows)
    return dict(zip(distinct.tolist(), facts["id"].gather(distinct).to_list(), strict=True))


def find_pairs(ctx: StageContext, active: ActiveFacts, changed: set[str], threshold: float) -> NightPairs:
    """Similar pairs of the `changed` facts vs all active facts, with their contradiction, if any; the merge
    rule judges those above merge_threshold in workers from when the texts are read (NightPairs).

    Pairs down to pair_rules.CONTRADICTION_MIN_COSINE are searched (a negation between statements sharing
    most words contradicts at a modest cosine); below `threshold` only contradictions are kept."""
    facts, fvecs = active.frame, active.space
    empty = pl.DataFrame(schema=PAIR_SCHEMA)
    if not changed or facts.height < 2:
        return NightPairs(empty, lambda: empty)
    rows = np.flatnonzero(facts["id"].is_in(list(changed)).to_numpy())
    qi, cj, sim = fvecs.pairs(fvecs.vectors(rows), min(threshold, pair_rules.CONTRADICTION_MIN_COSINE))
    qrow = rows[qi]
    swap = pl.col("x") > pl.col("y")
    # each pair once by id, with the cosine of its last finding
    found = (pl.DataFrame({"x": facts["id"].gather(qrow), "y": facts["id"].gather(cj), "c": sim.astype(np.float64),
                           "rx": qrow, "ry": cj})
             .filter(pl.col("x") != pl.col("y"))
             .select(fact_a=pl.when(swap).then("y").otherwise("x"), fact_b=pl.when(swap).then("x").otherwise("y"),
                     similarity="c", row_a=pl.when(swap).then("ry").otherwise("rx"),
                     row_b=pl.when(swap).then("rx").otherwise("ry"))
             .unique(subset=["fact_a", "fact_b"], keep="last", maintain_order=True)
             .sort("fact_a", "fact_b"))
    if found.height == 0:
        return NightPairs(empty, lambda: empty)
    a_ids, b_ids, cos = found["fact_a"].to_list(), found["fact_b"].to_list(), found["similarity"].to_list()
    with ctx.open() as con:
        texts = fact_texts(con, ctx.user_id, a_ids + b_ids)
    merge_threshold, min_cosine = ctx.settings.merge_threshold, ctx.settings.contradiction_threshold
    todo = np.flatnonzero(found["similarity"].to_numpy() > merge_threshold).tolist()
    verdicts = rule_pool.start(merge_screen.same_statements, [
        (texts[a_ids[i]], texts[b_ids[i]], cos[i], merge_threshold) for i in todo], ctx.settings.rule_workers,
        batched=True)
    try:
        # the rule names a reason only for pairs above its cosine floor whose valence codes may contradict
        codes = valence_codes(ctx, facts, np.concatenate([found["row_a"].to_numpy(), found["row_b"].to_numpy()]))
        maybe = np.flatnonzero(
            (found["similarity"].to_numpy() > min(min_cosine, pair_rules.CONTRADICTION_MIN_COSINE))
            & pair_rules.codes_may_contradict(codes[:found.height], codes[found.height:])).tolist()
        why: list[str | None] = [None] * found.height
        reasons = rule_pool.apply(pair_rules.contradiction, [
            (texts[a_ids[i]], texts[b_ids[i]], cos[i], min_cosine) for i in maybe], ctx.settings.rule_workers)
        for i, reason in zip(maybe, reasons, strict=True):
            why[i] = reason
    except BaseException:
        verdicts()
        raise
    conflict = pl.Series("conflict", why, dtype=pl.String)
    keep = (found["similarity"] > threshold) | conflict.is_not_null()
    pairs = found.select("fact_a", "fact_b", "similarity").with_columns(
        conflict, same_statement=pl.lit(None, pl.Boolean)).filter(keep)

    def judged() -> pl.DataFrame:
        same: list[bool | None] = [None] * found.height
        for i, verdict in zip(todo, verdicts(), strict=True):
            same[i] = verdict
        return pairs.with_columns(pl.Series("same_statement", same, dtype=pl.Boolean).filter(keep))

    return NightPairs(pairs, judged)


def store(con: db.Connection, ctx: StageContext, pairs: pl.DataFrame) -> None:
    """Keep this run's similar pairs for the merge stage (older runs' pairs are dropped)."""
    db.execute(con, "queries/consolidate/delete_old_run_fact_pairs", user_id=ctx.user_id, run_id=ctx.run_id)
    if pairs.height:
        with db.registered(con, "incoming_pairs", pairs.to_arrow()):
            db.execute(con, "queries/consolidate/replace_run_fact_pairs", user_id=ctx.user_id, run_id=ctx.run_id)


def ensure_stored(ctx: StageContext, embedder: Embedder) -> None:
    """When this run's confidence stage did not run (stages chosen by hand), search and store the pairs now."""
    with ctx.open() as con:
        if completed_counts(con, ctx.run_id, ctx.user_id, "confidence") is not None:
            return
        changed = {r[0] for r in db.rows(con, "queries/consolidate/run_new_facts", user_id=ctx.user_id, run_id=ctx.run_id)}
    found = find_pairs(ctx, active_facts(ctx, embedder), changed, ctx.settings.merge_threshold)
    judged = found.judged()
    with ctx.open() as con, db.transaction(con):
        store(con, ctx, judged)
