"""Stage 3, confidence: evidence for and against the facts, contradictions, and updates that supersede.

Reads the tenant's active facts and this run's episodes; decides which episodes support a fact
(c += gain (1 - c)) or speak against it, which new facts contradict an older one (both halved, the
pair queued for review), which say never of what another states (linked for review, both kept:
engram.consolidate.never) and which state a newer value of it (the older one superseded); writes those
changes with their fact_events, the supports / contradicts sources, the reviews, and the night's
judged pairs for the merge stage (engram.consolidate.pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from engram.consolidate import fact_keys, pair_rules, pairs, rule_pool
from engram.consolidate.context import (
    StageContext,
    StagePlan,
    fact_texts,
    new_review,
    queue_reviews,
    queued_pairs,
    vectors_of,
)
from engram.consolidate.never import never_episode_links, never_links
from engram.consolidate.speakers import voiced
from engram.consolidate.scoring import reinforced_array
from engram.consolidate.updates import COUNT_MIN_COSINE, count_updates, date_updates, dated_things, frame_updates
from engram.embed.models import Embedder
from engram.store import db, fact_ops
from engram.text.sentences import best_sentence, valence_conflict


def confidence(ctx: StageContext, embedder: Embedder) -> StagePlan:
    """Evidence from this run's episodes, then contradiction detection among changed facts."""
    s = ctx.settings

    active = pairs.active_facts(ctx, embedder)
    facts, fvecs, conf_now = active.frame, active.space, active.confidence
    with ctx.open() as con:
        eps = db.query_arrow(con, "queries/consolidate/run_episode_vectors", user_id=ctx.user_id, run_id=ctx.run_id)
        links = {(e, f) for e, f in db.rows(con, "queries/consolidate/episode_fact_links", user_id=ctx.user_id, run_id=ctx.run_id)}
        created = {r[0] for r in db.rows(con, "queries/consolidate/run_new_facts", user_id=ctx.user_id, run_id=ctx.run_id)}
    counts: dict[str, Any] = {"facts": facts.height, "episodes": eps.num_rows}
    # evidence: new episodes with cos >= threshold support a fact they did not produce
    ei = fi = maybe = np.zeros(0, np.int64)
    sim = np.zeros(0, np.float32)
    support_conflicts: Callable[[], list[Any]] = list
    if eps.num_rows and facts.height:
        evecs = vectors_of(eps["embedding"], embedder.dim)
        ep_ids, ep_texts = eps["id"].to_pylist(), eps["content"].to_pylist()
        ei, fi, sim = fvecs.pairs(evecs, s.support_threshold - 1e-9)
        # ids are read for the facts in pairs only: a list of every active fact's id took ~70 MB at 1M facts
        id_of = pairs.ids_of_rows(facts, fi)
        own = np.fromiter(((ep_ids[e], id_of[f]) in links for e, f in zip(ei.tolist(), fi.tolist(), strict=True)),
                          bool, len(ei))
        ei, fi, sim = ei[~own], fi[~own], sim[~own]
        # similar but of opposite valence is evidence against, not for. Each fact's valence code is kept
        # with its keys and each episode's best sentence is coded here: only the pairs whose codes may
        # conflict are read and go through the rule, in workers while the new facts' pairs are searched
        best = {e: best_sentence(ep_texts[e]) for e in set(ei.tolist())}  # once per episode
        ep_code = {e: pair_rules.valence_code(text) for e, text in best.items()}
        maybe = np.flatnonzero(pair_rules.codes_may_conflict(
            np.array([ep_code[e] for e in ei.tolist()], np.int64), pairs.valence_codes(ctx, facts, fi)))
        with ctx.open() as con:
            texts = fact_texts(con, ctx.user_id, [id_of[f] for f in fi[maybe].tolist()])
        support_conflicts = rule_pool.start(valence_conflict, [
            (best[e], texts[id_of[f]]) for e, f in zip(ei[maybe].tolist(), fi[maybe].tolist(), strict=True)],
            s.rule_workers)
    # One similarity search of this run's new facts vs all active facts serves contradiction and
    # merge. Reinforced facts are not searched again: their vectors did not change, and every pair
    # was examined when its newer fact was created, so searching them finds nothing new.
    try:
        # the merge rule judges the pairs above merge_threshold in workers while the rest of this stage
        # computes and writes
        night = pairs.find_pairs(ctx, active, created, min(s.contradiction_threshold, s.merge_threshold))
    finally:
        against = np.zeros(len(ei), bool)
        against[maybe] = [c is not None for c in support_conflicts()]
    try:
        sources = pl.DataFrame({
            "fact_id": facts["id"].gather(fi), "episode_id": eps["id"].take(pa.array(ei)).to_pylist(),
            "relation": np.where(against, "contradicts", "supports"), "similarity": sim.astype(np.float64)},
            schema={"fact_id": pl.String, "episode_id": pl.String, "relation": pl.String, "similarity": pl.Float64})
        support_changes, new_conf = _reinforcements(facts, conf_now, fi[~against], s.support_gain)
        conf, valid_from = _of_conflicting(facts, new_conf, night.conflicting())
        contra_changes, reviews = _contradictions(ctx, night.conflicting(), conf, valid_from)
        contra_changes += _frame_supersessions(ctx, created, {c.fact_id for c in contra_changes})
        contra_changes += _count_supersessions(ctx, facts, fvecs, created, {c.fact_id for c in contra_changes})
        contra_changes += _restatement_supersessions(ctx, facts, night.pairs, contra_changes)
        conflicts = night.conflicting()
        never_changes, never_reviews = never_links(ctx, facts, fvecs, created, {
            frozenset(p) for p in zip(conflicts["fact_a"].to_list(), conflicts["fact_b"].to_list(), strict=True)})
        reviews += never_reviews
        sources = pl.concat([sources, _never_sources(ctx, facts, fvecs, created, eps, embedder.dim)]).unique(
            ["fact_id", "episode_id", "relation"], keep="first", maintain_order=True)
    except BaseException:
        night.judged()
        raise
    counts.update(reinforced=support_changes.height, supports=int((~against).sum()), against=int(against.sum()),
                  similar_pairs=night.pairs.height, contradictions=len(reviews),
                  penalised=sum(c.action == "contradicted" for c in contra_changes),
                  superseded=sum(c.action == "superseded" for c in contra_changes), never_links=len(never_reviews))

    def write(con: db.Connection) -> None:
        try:
            fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, support_changes, ctx.as_of)
            fact_ops.add_sources(con, ctx.user_id, ctx.run_id, sources)
            fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, contra_changes, ctx.as_of)
            fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, never_changes, ctx.as_of)
            queue_reviews(con, reviews)
        finally:
            judged_pairs = night.judged()  # waited for also when a write fails, as rule_pool.start asks
        pairs.store(con, ctx, judged_pairs)

    return StagePlan(counts, write)


def _reinforcements(facts: pl.DataFrame, conf: np.ndarray, supported: np.ndarray, gain: float
                    ) -> tuple[pl.DataFrame, np.ndarray]:
    """The changes of the facts at frame rows `supported` (one row per supporting episode), each reinforced
    once per episode, and every fact's confidence after them (frame order). Column-wise: a night at 1M facts
    reinforces ~10^5 facts, which one FactChange each took seconds to build and frame."""
    k = np.bincount(supported, minlength=len(conf))
    rows = np.flatnonzero(k)
    after = conf.copy()
    after[rows] = reinforced_array(conf[rows], k[rows], gain)
    changes = pl.DataFrame({"fact_id": facts["id"].gather(rows), "evidence_delta": k[rows], "confidence": after[rows]})
    changes = changes.with_columns(action=pl.lit("reinforced"), reinforced=pl.lit(True),
                                   reason=pl.format("{} supporting episode(s)", pl.col("evidence_delta")))
    return changes, after


def _of_conflicting(facts: pl.DataFrame, conf: np.ndarray, conflict: pl.DataFrame
                    ) -> tuple[dict[str, float], dict[str, datetime]]:
    """Confidence and valid_from of the facts in conflicting pairs: the few _contradictions reads, not a
    dict over every active fact (two of those took ~150 MB at 1M facts)."""
    involved = set(conflict["fact_a"].to_list()) | set(conflict["fact_b"].to_list())
    if not involved:
        return {}, {}
    rows = facts.with_row_index("row").filter(pl.col("id").is_in(list(involved)))
    ids = rows["id"].to_list()
    return (dict(zip(ids, conf[rows["row"].to_numpy()].tolist(), strict=True)),
            dict(zip(ids, rows["valid_from"].to_list(), strict=True)))


def _frame_supersessions(ctx: StageContext, created: set[str], decided: set[str]) -> list[fact_ops.FactChange]:
    """A new fact with the frame of an older one and another value supersedes it (engram.consolidate.updates)."""
    if not created:
        return []
    with ctx.open() as con:  # only the frames the new facts take part in
        rows = fact_keys.facts_sharing_frames(con, ctx.user_id, created, store=True)
    ids, texts, valid_from = (list(col) for col in zip(*rows, strict=True)) if rows else ([], [], [])
    return [
        fact_ops.FactChange(u.old_id, "superseded", "update: a later fact states another value in the same frame",
                            status="superseded", valid_to=u.valid_to, related_fact_id=u.new_id)
        for u in frame_updates(ids, texts, valid_from, created)
        if u.old_id not in decided
    ]


def _never_sources(ctx: StageContext, facts: pl.DataFrame, space: Any, created: set[str], eps: pa.Table, dim: int
                   ) -> pl.DataFrame:
    """`contradicts` sources from this run's messages of a person to the new facts that say never of what
    the message states (engram.consolidate.never.never_episode_links): the fact is kept, its evidence against
    it is recorded and shown with it."""
    empty = pl.DataFrame(schema={"fact_id": pl.String, "episode_id": pl.String, "relation": pl.String,
                                 "similarity": pl.Float64})
    if not created or not eps.num_rows:
        return empty
    rows = np.flatnonzero(facts["id"].is_in(list(created)).to_numpy())
    ids = facts["id"].gather(rows).to_list()
    with ctx.open() as con:
        texts = fact_texts(con, ctx.user_id, ids)
    people = np.flatnonzero(voiced(pl.from_arrow(eps.select(["role", "origin", "kind"])), ctx.settings))
    if not len(people):
        return empty
    evecs = vectors_of(eps["embedding"], dim)[people]
    contents = eps["content"].to_pylist()
    ep_ids = eps["id"].to_pylist()
    roles = dict(zip(ep_ids, [r or "" for r in eps["role"].to_pylist()], strict=True))
    with ctx.open() as con, db.registered(con, "wanted_facts", pa.table({"id": pa.array(sorted(ids), pa.string())})):
        speakers: dict[str, set[str]] = {}
        for fid, role in db.rows(con, "queries/consolidate/fact_source_roles", user_id=ctx.user_id):
            speakers.setdefault(fid, set()).add(role)
    links = never_episode_links(list(zip(ids, [texts[i] for i in ids], space.vectors(rows), strict=True)),
                                [(ep_ids[j], contents[j], evecs[k]) for k, j in enumerate(people.tolist())],
                                speakers, roles)
    if not links:
        return empty
    fact_ids, episode_ids, sims = (list(x) for x in zip(*links, strict=True))
    return pl.DataFrame({"fact_id": fact_ids, "episode_id": episode_ids, "relation": ["contradicts"] * len(links),
                         "similarity": sims}, schema=empty.schema)


def _count_supersessions(ctx: StageContext, facts: pl.DataFrame, space: Any, created: set[str], decided: set[str]
                         ) -> list[fact_ops.FactChange]:
    """A fact stating a newer value of a count, or a new date of a planned thing, that an older fact of the same
    subject states supersedes it (engram.consolidate.updates: count_update, date_update), among pairs of a new
    fact and an active fact found by vector."""
    if not created or facts.height < 2:
        return []
    rows = np.flatnonzero(facts["id"].is_in(list(created)).to_numpy())
    qi, cj, _ = space.pairs(space.vectors(rows), COUNT_MIN_COSINE)
    if not len(qi):
        return []
    a_rows, b_rows = rows[qi], cj
    ids = facts["id"]
    a_ids, b_ids = ids.gather(a_rows).to_list(), ids.gather(b_rows).to_list()
    valid_from = facts["valid_from"]
    when = dict(zip(a_ids + b_ids, valid_from.gather(a_rows).to_list() + valid_from.gather(b_rows).to_list(),
                    strict=True))
    pairs_ = list(zip(a_ids, b_ids, strict=True))
    with ctx.open() as con:
        texts = fact_texts(con, ctx.user_id, a_ids + b_ids)
        dated = [p for p in pairs_ if dated_things(texts[p[0]]) and dated_things(texts[p[1]])]
        said = _said_times(con, ctx.user_id, [x for p in dated for x in p]) if dated else {}
    changes: dict[str, fact_ops.FactChange] = {}
    for u, why in [*((u, "count") for u in count_updates(pairs_, texts, when)),
                   *((u, "date") for u in date_updates(dated, texts, said, when))]:
        if u.old_id not in decided and u.old_id not in changes:
            changes[u.old_id] = fact_ops.FactChange(
                u.old_id, "superseded", f"update: a later fact states another value of the same {why}",
                status="superseded", valid_to=u.valid_to, related_fact_id=u.new_id)
    return [changes[k] for k in sorted(changes)]


def _said_times(con: db.Connection, user_id: str, ids: list[str]) -> dict[str, datetime]:
    """{fact id: when it was said (asserted_at)} of the given facts."""
    with db.registered(con, "wanted_facts", pa.table({"id": pa.array(sorted(set(ids)), pa.string())})):
        return dict(db.rows(con, "queries/consolidate/fact_said_times", user_id=user_id))


def _restatement_supersessions(ctx: StageContext, facts: pl.DataFrame, similar: pl.DataFrame,
                               decided: list[fact_ops.FactChange]) -> list[fact_ops.FactChange]:
    """The end of a habit supersedes its restatements: a fact above merge_threshold to a fact a cessation
    superseded this run, stated before the newer one, that states what ended and agrees with the
    superseded one (pair_rules.restates) is superseded by the same newer fact. (Another value is updated
    through its frame, which takes every older statement of it: engram.consolidate.updates.)"""
    by = {c.fact_id: (c.valid_to, c.related_fact_id) for c in decided if c.action == "superseded" and c.related_fact_id}
    touched = {c.fact_id for c in decided}
    near = similar.filter((pl.col("similarity") > ctx.settings.merge_threshold) & pl.col("conflict").is_null()
                          & (pl.col("fact_a").is_in(list(by)) ^ pl.col("fact_b").is_in(list(by))))
    todo = [(a, b, c) if a in by else (b, a, c)
            for a, b, c in near.select("fact_a", "fact_b", "similarity").iter_rows()]
    todo = [(old, other, c) for old, other, c in todo if other not in touched and other != by[old][1]]
    if not todo:
        return []
    ids = {x for old, other, _ in todo for x in (old, other, by[old][1])}
    valid_from = dict(facts.filter(pl.col("id").is_in(list(ids))).select("id", "valid_from").iter_rows())
    with ctx.open() as con:
        texts = fact_texts(con, ctx.user_id, list(ids))
    out: dict[str, tuple[datetime, str, str, float]] = {}  # other -> (valid_to, newer, old, cos)
    for old, other, c in sorted(todo):
        until, newer = by[old]
        stated = valid_from.get(other)
        if stated is None or until is None or stated >= until or not pair_rules.restates(
                texts[other], texts[old], texts[newer]):
            continue
        if other not in out or until < out[other][0]:
            out[other] = (until, newer, old, c)
    return [
        fact_ops.FactChange(fid, "superseded", f"update: restates {old}, which a later fact replaced (cos {c:.3f})",
                            status="superseded", valid_to=until, related_fact_id=newer)
        for fid, (until, newer, old, c) in sorted(out.items())
    ]


def _contradictions(
    ctx: StageContext, conflict: pl.DataFrame, conf: dict[str, float], valid_from: dict[str, datetime],
) -> tuple[list[fact_ops.FactChange], list[dict[str, Any]]]:
    """Knowledge updates supersede; other new contradictions halve both sides and are queued for review.

    A different value stated at a later time is an update ("I live in Lisbon", months later "I live in
    Porto"): the older fact is superseded, valid until the newer one's valid_from, and still answers
    as_of queries. A negation or antonym, or two values asserted at the same time, is a contradiction
    the rules cannot settle: both sides are halved (once per fact per run) and the pair is queued.
    """
    if conflict.height == 0:  # pair_rules.contradiction named no reason, its cosine gate included
        return [], []
    with ctx.open() as con:
        seen = queued_pairs(con, ctx.user_id, "contradiction")
    superseded: dict[str, tuple[datetime, str, float]] = {}  # older id -> (valid_to, newer id, cos)
    penalised: dict[str, str] = {}
    reviews = []
    for a, b, c, why in conflict.select("fact_a", "fact_b", "similarity", "conflict").iter_rows():
        pair = frozenset((a, b))
        if pair in seen:
            continue
        seen.add(pair)
        if why in ("different value", "cessation") and valid_from[a] != valid_from[b]:
            older, newer = (a, b) if valid_from[a] < valid_from[b] else (b, a)
            if older not in superseded or valid_from[newer] < superseded[older][0]:
                superseded[older] = (valid_from[newer], newer, c)
            continue
        penalised.setdefault(a, b)
        penalised.setdefault(b, a)
        reviews.append(new_review(ctx, "contradiction", sorted(pair), f"{why}; cos {c:.3f}"))
    changes = [
        fact_ops.FactChange(fid, "superseded", f"update: a later fact states another value or the end of this one (cos {c:.3f})",
                            status="superseded", valid_to=until, related_fact_id=newer)
        for fid, (until, newer, c) in sorted(superseded.items())
    ]
    changes += [
        fact_ops.FactChange(fid, "contradicted", "contradiction penalty: confidence halved",
                            confidence=conf[fid] / 2, related_fact_id=other)
        for fid, other in sorted(penalised.items()) if fid not in superseded
    ]
    return changes, reviews
