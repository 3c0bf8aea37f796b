"""The nightly consolidation stages for one tenant, without Prefect.

Each stage reads in a short connection, computes with numpy/polars while the store is closed,
then writes everything (and its runs row) in one transaction. A stage this run already
completed is skipped, so a run resumed after a crash continues where it stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from engram.arrays import unique_sorted
from engram.consolidate import fact_keys, merge_screen, pair_rules, rule_pool
from engram.consolidate.cluster import cluster_embeddings
from engram.consolidate.fact_keys import statement_key
from engram.consolidate.merge_plan import (
    FactInfo,
    components,
    plan_merges,
)
from engram.consolidate.neighbours import FactSpace, load_facts
from engram.consolidate.scoring import (
    decayed_array,
    initial_confidence,
    reinforced,
    reinforced_array,
)
from engram.consolidate.updates import frame_updates, restatement_runs
from engram.embed.models import Embedder
from engram.errors import InvalidInput
from engram.llm.usage import record_run_usage
from engram.settings import Settings
from engram.store import db, fact_ops
from engram.store.crash import crash_point
from engram.store.runs import completed_counts, record_stage
from engram.text.atomic import answered_question, atomic_statements
from engram.text.normalize import content_hash, stable_id
from engram.text.sentences import best_sentence, claim_type, valence_conflict

log = logging.getLogger(__name__)

STAGES = ("embed", "extract", "confidence", "merge", "resolve", "deprecate", "archive", "publish")
VISIBILITY_RANK = {"private": 0, "project": 1, "global": 2}


def choose_stages(stages: list[str] | None) -> list[str]:
    """The requested stages in pipeline order (all when None); unknown names raise InvalidInput."""
    chosen = list(stages or STAGES)
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        raise InvalidInput(f"stages: unknown {unknown}; choose from {list(STAGES)}")
    return [s for s in STAGES if s in chosen]


@dataclass(frozen=True)
class StageContext:
    """Everything a stage needs to know about the run it belongs to."""

    settings: Settings
    user_id: str
    run_id: str
    as_of: datetime
    dry_run: bool = False
    checked: bool = False  # run_steps already skipped this run's completed stages: run_stage need not look


def vectors_of(column: pa.ChunkedArray | pl.Series, dim: int) -> np.ndarray:
    """A list<float> column as a float32 [n, dim] matrix, without a Python loop."""
    arr = column.to_arrow() if isinstance(column, pl.Series) else column
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(arr), dim)


def run_stage(ctx: StageContext, stage: str, body: Callable[[], tuple[dict[str, Any], Callable[[db.Connection], None] | None]]) -> dict[str, Any]:
    """Skip a completed stage; else compute with `body`, then write its result and runs row atomically.

    `body` returns (counts, writer); the writer runs inside the stage's transaction (None = nothing to write).
    """
    started = datetime.now()
    t0 = time.perf_counter()
    if not ctx.checked:
        with db.open_store(ctx.settings) as con:
            done = completed_counts(con, ctx.run_id, ctx.user_id, stage)
        if done is not None:
            return {**done, "skipped": True}
    counts, writer = body()
    counts["seconds"] = round(time.perf_counter() - t0, 3)
    if ctx.dry_run:
        return {**counts, "dry_run": True}
    crash_point(f"{stage}:before_write")
    with db.open_store(ctx.settings) as con, db.transaction(con):
        if writer is not None:
            writer(con)
        crash_point(f"{stage}:mid_write")
        record_stage(con, ctx.run_id, ctx.user_id, stage, ctx.as_of, started, counts)
    crash_point(f"{stage}:after_write")
    log.info("stage %s user=%s run=%s %s", stage, ctx.user_id, ctx.run_id, counts)
    return counts


# ---------------------------------------------------------------- extract


def statement_drafts(
    eps: pl.DataFrame, rows: list[int], known: Callable[[Iterable[str]], set[str]]
) -> list[tuple[str, np.ndarray, str, datetime | None]]:
    """(text, member rows, reason, moment) per distinct statement of the given episodes.

    The same statement said in several episodes is one fact resting on all of them; a statement an
    active fact already makes (`known` returns those of the statement keys it is given) creates
    nothing: the confidence stage counts the episode as that fact's support. An episode that states
    nothing on its own but answers the question of the turn before it (`previous_id`, when that turn
    is among `eps`) makes one statement of the two, resting on both. A statement said again after
    another value of its frame is a new fact (updates.restatement_runs): the value came back.
    """
    said: list[tuple[str, str, list[int], datetime | None, datetime]] = []  # key, text, members, moment, when
    contents, roles, times = eps["content"].to_list(), eps["role"].to_list(), eps["created_at"].to_list()
    row_of = {eid: j for j, eid in enumerate(eps["id"].to_list())}
    previous = [row_of.get(p) if p is not None else None for p in eps["previous_id"].to_list()]
    for i in rows:
        p = previous[i]
        listener = roles[p] if p is not None else None  # "you" is the one who spoke the turn before
        found = [(st, [i]) for st in atomic_statements(contents[i], roles[i], times[i], listener)]
        if not found and p is not None and roles[p] != roles[i]:
            st = answered_question(contents[p], roles[p], contents[i], roles[i], times[i])
            found = [(st, [p, i])] if st is not None else []
        for st, members in found:
            # a moment in the past dates what happened; a plan ("next month") is a fact from when it was said
            moment = st.about if st.about is not None and st.about <= times[i] else None
            said.append((statement_key(st.text), st.text, members, moment, moment or times[i]))
    runs = restatement_runs([(key, fact_keys.frame_key(text), when) for key, text, _, _, when in said])
    grouped: dict[tuple[str, int], tuple[str, list[int], datetime | None]] = {}
    for (key, text, members, moment, _), run in zip(said, runs, strict=True):
        first_text, all_members, first = grouped.get((key, run), (text, [], moment))
        all_members.extend(members)
        grouped[(key, run)] = (first_text, all_members, first)
    # an active fact already states the first run; a later run is the value coming back after another
    stated = known({key for key, _ in grouped})
    return [(text, np.array(sorted(set(members))), f"statement of {len(set(members))} episode(s)", moment)
            for (key, run), (text, members, moment) in grouped.items() if run > 0 or key not in stated]


def _fact_row(ctx: StageContext, fact_id: str, text: str, members: list[int], cols: dict[str, list[Any]],
              vector: np.ndarray, embedder: Embedder, reason: str, kind: str | None = None,
              moment: datetime | None = None) -> dict[str, Any]:
    """A new fact's row from its member episodes (`members`: rows of the episode columns `cols`)."""
    s = ctx.settings
    visibility = min((cols["visibility"][i] for i in members), key=lambda v: VISIBILITY_RANK.get(v, 0))
    tags = sorted({t for i in members for t in (cols["tags"][i] or [])})
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
        "is_private": any(bool(cols["is_private"][i]) for i in members) or visibility == "private",
        "run_id": ctx.run_id, "reason": reason,
    }


def extract(ctx: StageContext, embedder: Embedder, llm: Any = None) -> dict[str, Any]:
    """Atomic facts from the new episodes: each statement worth remembering, speaker and time resolved.

    Offline, every new episode's statements (engram.text.atomic) become facts. With an LLM, HDBSCAN
    clusters of the episodes batch its work (several atomic facts per cluster, each citing its
    episodes); a cluster the LLM fails falls back to the offline statements of its new episodes.
    """
    s = ctx.settings

    def body() -> tuple[dict[str, Any], Callable[[db.Connection], None] | None]:
        window_start = ctx.as_of - timedelta(days=s.recluster_window_days)
        with db.open_store(s) as con:
            eps = db.query(con, "queries/consolidation_episodes", user_id=ctx.user_id, as_of=ctx.as_of,
                           window_start=window_start, model=embedder.model, dim=embedder.dim)
        new_ids = eps.filter(pl.col("is_new"))["id"].to_list()
        counts: dict[str, Any] = {"episodes": eps.height, "new_episodes": len(new_ids)}
        if not new_ids:
            return {**counts, "clusters": 0, "facts_created": 0}, None
        vecs = vectors_of(eps["embedding"], embedder.dim)
        facts, sources = _facts_of_episodes(ctx, eps, vecs, embedder, llm, counts)
        usage = counts.pop("_llm_usage", None)
        extraction_cases = counts.pop("_extraction_cases", [])
        counts["facts_created"] = len(facts)
        watermark = eps["created_at"].max()

        def write(con: db.Connection) -> None:
            if facts:
                frame = pa.Table.from_pylist(facts)
                with db.registered(con, "incoming_facts", frame):
                    db.execute(con, "queries/insert_facts")
                    db.execute(con, "queries/insert_created_events", run_id=ctx.run_id, now=ctx.as_of)
                fact_ops.add_sources(con, ctx.user_id, ctx.run_id, pl.DataFrame(sources))
            if usage is not None:
                record_run_usage(con, ctx.run_id, ctx.user_id, "extract", usage, ctx.as_of)
            queue_reviews(con, extraction_cases)
            consumed = pa.table({"id": pa.array(new_ids, pa.string())})
            with db.registered(con, "consumed_episodes", consumed):
                db.execute(con, "queries/mark_episodes_consolidated", user_id=ctx.user_id, run_id=ctx.run_id)

        counts["watermark"] = str(watermark)
        return counts, write

    return run_stage(ctx, "extract", body)


def _facts_of_episodes(
    ctx: StageContext, eps: pl.DataFrame, vecs: np.ndarray, embedder: Embedder, llm: Any, counts: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Candidate facts and their extracted_from sources: the LLM's per cluster when configured, else
    (and for what it fails) the offline statements of the new episodes."""
    s = ctx.settings
    new_rows = np.flatnonzero(eps["is_new"].to_numpy()).tolist()
    drafts: list[tuple[str, np.ndarray, str, str | None, str | None, datetime | None]] = []
    offline_rows = new_rows
    counts["clusters"] = 0
    if llm is not None:
        labels = cluster_embeddings(vecs, s.min_cluster_size, s.pca_dims, s.cluster_min_similarity)
        clusters = [np.flatnonzero(labels == lab) for lab in sorted(set(labels.tolist()) - {-1})]
        counts.update(clusters=len(clusters), noise=int((labels == -1).sum()))
        if clusters and s.llm_mode == "batch":
            # batch mode: each cluster becomes an extraction case for the run's batch job; its facts
            # are written when the job is collected (engram.consolidate.batch)
            ids = eps["id"].to_list()
            counts["_extraction_cases"] = [
                _review(ctx, "extraction", sorted(ids[int(i)] for i in idx), f"cluster of {len(idx)} episode(s)")
                for idx in clusters]
            counts["extraction_queued"] = len(clusters)
            covered = {int(i) for idx in clusters for i in idx}
            offline_rows = [i for i in new_rows if i not in covered]
        elif clusters:
            llm_drafts, failed = _llm_drafts(ctx, eps, clusters, llm, counts)
            drafts += [(t, idx, why, kind, cat, None) for t, idx, why, kind, cat in llm_drafts]
            covered = {int(i) for idx in clusters for i in idx} - {int(i) for idx in failed for i in idx}
            offline_rows = [i for i in new_rows if i not in covered]
    with db.open_store(s) as con:
        statements = statement_drafts(eps, offline_rows, lambda keys: fact_keys.known_statements(
            con, ctx.user_id, keys, store=not ctx.dry_run))
    drafts += [(t, idx, f"extractive: {why}", None, None, moment) for t, idx, why, moment in statements]
    counts["statements"] = len(statements)
    return fact_rows(ctx, eps, vecs, drafts, embedder)


def fact_rows(
    ctx: StageContext, eps: pl.DataFrame, vecs: np.ndarray,
    drafts: list[tuple[str, np.ndarray, str, str | None, str | None, datetime | None]], embedder: Embedder,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Fact rows and their extracted_from sources for drafts (text, member rows of eps, reason, claim
    type, category, moment); eps/vecs are the episodes the member rows index."""
    if not drafts:
        return [], []
    contents = eps["content"].to_list()
    # a statement that is its episode's whole text keeps the episode's vector; the rest are embedded as stored
    same = [len(d[1]) == 1 and d[0] == contents[int(d[1][0])] for d in drafts]
    embedded = iter(embedder.embed([d[0] for d, keep in zip(drafts, same, strict=True) if not keep]))
    fact_vecs = [vecs[int(d[1][0])] if keep else next(embedded) for d, keep in zip(drafts, same, strict=True)]
    facts, sources = [], []
    cols = {c: eps[c].to_list() for c in ("id", "visibility", "tags", "created_at", "is_private")}
    for (text, idx, reason, kind, category, moment), vec in zip(drafts, fact_vecs, strict=True):
        members = [int(i) for i in idx]
        member_ids = [cols["id"][i] for i in members]
        fact_id = stable_id("fact", ctx.user_id, content_hash(text), *sorted(member_ids))
        row = _fact_row(ctx, fact_id, text, members, cols, vec, embedder, reason, kind, moment)
        if category:
            row["category"] = category
        facts.append(row)
        sims = (vecs[idx] @ vec).tolist()
        sources += [{"fact_id": fact_id, "episode_id": eid, "relation": "extracted_from", "similarity": sim}
                    for eid, sim in zip(member_ids, sims, strict=True)]
    return facts, sources


def _llm_drafts(
    ctx: StageContext, eps: pl.DataFrame, clusters: list[np.ndarray], llm: Any, counts: dict[str, Any]
) -> tuple[list[tuple[str, np.ndarray, str, str | None, str | None]], list[np.ndarray]]:
    """Atomic facts from the LLM, each resting on the cited episodes; failed clusters go extractive."""
    from engram.consolidate.llm_extract import ClusterInput, extract_facts

    s = ctx.settings
    inputs = [
        ClusterInput(f"c{n}", [(r["id"], r["role"], r["content"], r["created_at"])
                               for r in eps[idx.tolist()].iter_rows(named=True)])
        for n, idx in enumerate(clusters)
    ]
    result = extract_facts(llm, inputs, s.llm_max_prompt_tokens, s.llm_run_token_budget)
    position = {eid: i for i, eid in enumerate(eps["id"].to_list())}
    drafts = [
        (f.text, np.array(sorted(position[e] for e in f.episode_ids)), f"llm extraction ({llm.model})",
         f.claim_type, f.category)
        for f in result.facts
    ]
    failed = set(result.failed_clusters)
    answered = {f.cluster_id for f in result.facts}
    # a cluster the LLM answered with no valid fact stays episodes only; one it never answered goes extractive
    fallback = [idx for n, idx in enumerate(clusters) if f"c{n}" in failed and f"c{n}" not in answered]
    counts.update(llm_facts=len(result.facts), llm_dropped=len(result.dropped), llm_fallback_clusters=len(fallback),
                  llm=result.usage.as_dict())
    counts["_llm_usage"] = result.usage
    return drafts, fallback


# ---------------------------------------------------------------- confidence


def _fact_matrix(ctx: StageContext, embedder: Embedder) -> tuple[pl.DataFrame, FactSpace, np.ndarray]:
    """Active facts of the tenant (with each one's valence code: the facts are keyed first), their vectors
    (through the published index when there is one), and their confidence decayed to as_of."""
    with db.open_store(ctx.settings) as con:
        if not ctx.dry_run:
            fact_keys.refresh(con, ctx.user_id)
        arrow, vecs = load_facts(ctx.settings, con, ctx.user_id, embedder.model, embedder.dim)
    facts = pl.from_arrow(arrow)
    if facts.height == 0:
        return facts, vecs, np.zeros(0)
    as_of = np.datetime64(ctx.as_of.replace(tzinfo=None), "us")
    ages = (as_of - facts["confidence_at"].to_numpy().astype("datetime64[us]")) / np.timedelta64(1, "D")
    return facts, vecs, decayed_array(facts["confidence"].to_numpy(), ages, ctx.settings.decay_rate)


def _valence_codes(ctx: StageContext, facts: pl.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Valence codes (pair_rules.valence_code) of the facts at frame rows: as stored with their keys, or
    coded here for a fact not keyed (a dry run keys nothing)."""
    codes = facts["valence_code"].gather(rows)
    if codes.null_count():
        unknown = np.flatnonzero(codes.is_null().to_numpy())
        ids = facts["id"].gather(rows[unknown]).to_list()
        with db.open_store(ctx.settings) as con:
            texts = _fact_texts(con, ctx.user_id, ids)
        codes = codes.scatter(unknown, [pair_rules.valence_code(texts[fid]) for fid in ids])
    return codes.to_numpy().astype(np.int64)


def _fact_texts(con: db.Connection, user_id: str, ids: list[str]) -> dict[str, str]:
    with db.registered(con, "wanted_facts", pa.table({"id": pa.array(sorted(set(ids)), pa.string())})):
        return dict(db.rows(con, "queries/fact_texts", user_id=user_id))


def _existing_pairs(con: db.Connection, user_id: str, kind: str) -> set[frozenset[str]]:
    return {frozenset(r[0]) for r in db.rows(con, "queries/review_subjects", user_id=user_id, kind=kind)}


def confidence(ctx: StageContext, embedder: Embedder) -> dict[str, Any]:
    """Evidence from this run's episodes, then contradiction detection among changed facts."""
    s = ctx.settings

    def body() -> tuple[dict[str, Any], Callable[[db.Connection], None] | None]:
        facts, fvecs, conf_now = _fact_matrix(ctx, embedder)
        with db.open_store(s) as con:
            eps = db.query_arrow(con, "queries/run_episode_vectors", user_id=ctx.user_id, run_id=ctx.run_id)
            links = {(e, f) for e, f in db.rows(con, "queries/episode_fact_links", user_id=ctx.user_id, run_id=ctx.run_id)}
            created = {r[0] for r in db.rows(con, "queries/run_new_facts", user_id=ctx.user_id, run_id=ctx.run_id)}
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
            id_of = _ids_of_rows(facts, fi)
            own = np.fromiter(((ep_ids[e], id_of[f]) in links for e, f in zip(ei.tolist(), fi.tolist(), strict=True)),
                              bool, len(ei))
            ei, fi, sim = ei[~own], fi[~own], sim[~own]
            # similar but of opposite valence is evidence against, not for. Each fact's valence code is kept
            # with its keys and each episode's best sentence is coded here: only the pairs whose codes may
            # conflict are read and go through the rule, in workers while the new facts' pairs are searched
            best = {e: best_sentence(ep_texts[e]) for e in set(ei.tolist())}  # once per episode
            ep_code = {e: pair_rules.valence_code(text) for e, text in best.items()}
            maybe = np.flatnonzero(pair_rules.codes_may_conflict(
                np.array([ep_code[e] for e in ei.tolist()], np.int64), _valence_codes(ctx, facts, fi)))
            with db.open_store(s) as con:
                texts = _fact_texts(con, ctx.user_id, [id_of[f] for f in fi[maybe].tolist()])
            support_conflicts = rule_pool.start(valence_conflict, [
                (best[e], texts[id_of[f]]) for e, f in zip(ei[maybe].tolist(), fi[maybe].tolist(), strict=True)],
                s.rule_workers)
        # One similarity search of this run's new facts vs all active facts serves contradiction and
        # merge. Reinforced facts are not searched again: their vectors did not change, and every pair
        # was examined when its newer fact was created, so searching them finds nothing new.
        try:
            # the merge rule judges the pairs above merge_threshold in workers while the rest of this stage
            # computes and writes
            pairs, judged = _fact_pairs(ctx, facts, fvecs, created, min(s.contradiction_threshold, s.merge_threshold),
                                        judge=not ctx.dry_run)
        finally:
            against = np.zeros(len(ei), bool)
            against[maybe] = [c is not None for c in support_conflicts()]
        try:
            sources = pl.DataFrame({
                "fact_id": facts["id"].gather(fi), "episode_id": eps["id"].take(pa.array(ei)).to_pylist(),
                "relation": np.where(against, "contradicts", "supports"), "similarity": sim.astype(np.float64)},
                schema={"fact_id": pl.String, "episode_id": pl.String, "relation": pl.String, "similarity": pl.Float64})
            support_changes, new_conf = _reinforcements(facts, conf_now, fi[~against], s.support_gain)
            conf, valid_from = _of_conflicting(facts, new_conf, pairs)
            contra_changes, reviews = _contradictions(ctx, pairs, conf, valid_from)
            contra_changes += _frame_supersessions(ctx, created, {c.fact_id for c in contra_changes})
        except BaseException:
            judged()
            raise
        counts.update(reinforced=support_changes.height, supports=int((~against).sum()), against=int(against.sum()),
                      similar_pairs=pairs.height, contradictions=len(reviews),
                      penalised=sum(c.action == "contradicted" for c in contra_changes),
                      superseded=sum(c.action == "superseded" for c in contra_changes))

        def write(con: db.Connection) -> None:
            try:
                fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, support_changes, ctx.as_of)
                fact_ops.add_sources(con, ctx.user_id, ctx.run_id, sources)
                fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, contra_changes, ctx.as_of)
                queue_reviews(con, reviews)
            finally:
                judged_pairs = judged()  # waited for also when a write fails, as rule_pool.start asks
            store_pairs(con, ctx, judged_pairs)

        return counts, write

    return run_stage(ctx, "confidence", body)


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


def _of_conflicting(facts: pl.DataFrame, conf: np.ndarray, pairs: pl.DataFrame
                    ) -> tuple[dict[str, float], dict[str, datetime]]:
    """Confidence and valid_from of the facts in conflicting pairs: the few _contradictions reads, not a
    dict over every active fact (two of those took ~150 MB at 1M facts)."""
    conflict = pairs.filter(pl.col("conflict").is_not_null())
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
    with db.open_store(ctx.settings) as con:  # only the frames the new facts take part in
        rows = fact_keys.facts_sharing_frames(con, ctx.user_id, created, store=not ctx.dry_run)
    ids, texts, valid_from = (list(col) for col in zip(*rows, strict=True)) if rows else ([], [], [])
    return [
        fact_ops.FactChange(u.old_id, "superseded", "update: a later fact states another value in the same frame",
                            status="superseded", valid_to=u.valid_to, related_fact_id=u.new_id)
        for u in frame_updates(ids, texts, valid_from, created)
        if u.old_id not in decided
    ]


PAIR_SCHEMA = {"fact_a": pl.String, "fact_b": pl.String, "similarity": pl.Float64, "conflict": pl.String,
               "same_statement": pl.Boolean}


def _ids_of_rows(facts: pl.DataFrame, rows: np.ndarray) -> dict[int, str]:
    """{frame row: fact id} of the given rows (each read once)."""
    distinct = unique_sorted(rows)
    return dict(zip(distinct.tolist(), facts["id"].gather(distinct).to_list(), strict=True))


def _fact_pairs(
    ctx: StageContext, facts: pl.DataFrame, fvecs: FactSpace, changed: set[str], threshold: float, judge: bool
) -> tuple[pl.DataFrame, Callable[[], pl.DataFrame]]:
    """Similar pairs (`changed` facts vs all active facts, fact_a < fact_b) with their contradiction, if any,
    and a function returning them with the merge rule's verdict (same_statement) on each pair above
    merge_threshold. With `judge` the merge rule runs in workers from when the texts are read and the
    function waits for it (call it once, also when the caller fails meanwhile: rule_pool.start); without,
    same_statement stays null and the merge stage judges.

    Pairs down to pair_rules.CONTRADICTION_MIN_COSINE are searched (a negation between statements sharing
    most words contradicts at a modest cosine); below `threshold` only contradictions are kept."""
    empty = pl.DataFrame(schema=PAIR_SCHEMA)
    if not changed or facts.height < 2:
        return empty, lambda: empty
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
        return empty, lambda: empty
    a_ids, b_ids, cos = found["fact_a"].to_list(), found["fact_b"].to_list(), found["similarity"].to_list()
    with db.open_store(ctx.settings) as con:
        texts = _fact_texts(con, ctx.user_id, a_ids + b_ids)
    merge_threshold, min_cosine = ctx.settings.merge_threshold, ctx.settings.contradiction_threshold
    todo = np.flatnonzero(found["similarity"].to_numpy() > merge_threshold).tolist() if judge else []
    verdicts = rule_pool.start(merge_screen.same_statements, [
        (texts[a_ids[i]], texts[b_ids[i]], cos[i], merge_threshold) for i in todo], ctx.settings.rule_workers,
        batched=True)
    try:
        # the rule names a reason only for pairs above its cosine floor whose valence codes may contradict
        codes = _valence_codes(ctx, facts, np.concatenate([found["row_a"].to_numpy(), found["row_b"].to_numpy()]))
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

    return pairs, judged


def store_pairs(con: db.Connection, ctx: StageContext, pairs: pl.DataFrame) -> None:
    """Keep this run's similar pairs for the merge stage (older runs' pairs are dropped)."""
    db.execute(con, "queries/delete_old_run_fact_pairs", user_id=ctx.user_id, run_id=ctx.run_id)
    if pairs.height:
        with db.registered(con, "incoming_pairs", pairs.to_arrow()):
            db.execute(con, "queries/replace_run_fact_pairs", user_id=ctx.user_id, run_id=ctx.run_id)


def _contradictions(
    ctx: StageContext, pairs: pl.DataFrame, conf: dict[str, float], valid_from: dict[str, datetime],
) -> tuple[list[fact_ops.FactChange], list[dict[str, Any]]]:
    """Knowledge updates supersede; other new contradictions halve both sides and are queued for review.

    A different value stated at a later time is an update ("I live in Lisbon", months later "I live in
    Porto"): the older fact is superseded, valid until the newer one's valid_from, and still answers
    as_of queries. A negation or antonym, or two values asserted at the same time, is a contradiction
    the rules cannot settle: both sides are halved (once per fact per run) and the pair is queued.
    """
    conflict = pairs.filter(pl.col("conflict").is_not_null())  # pair_rules.contradiction, cosine gate included
    if conflict.height == 0:
        return [], []
    with db.open_store(ctx.settings) as con:
        seen = _existing_pairs(con, ctx.user_id, "contradiction")
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
        reviews.append(_review(ctx, "contradiction", sorted(pair), f"{why}; cos {c:.3f}"))
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


def _review(ctx: StageContext, kind: str, subject_ids: list[str], reason: str) -> dict[str, Any]:
    return {
        "id": stable_id("rv", ctx.user_id, kind, *subject_ids), "user_id": ctx.user_id, "kind": kind,
        "subject_ids": subject_ids, "reason": reason, "run_id": ctx.run_id, "created_at": ctx.as_of,
    }


def queue_reviews(con: db.Connection, reviews: list[dict[str, Any]]) -> None:
    """Insert review rows (an existing review id is kept)."""
    if not reviews:
        return
    table = pa.Table.from_pylist(reviews, schema=pa.schema([
        ("id", pa.string()), ("user_id", pa.string()), ("kind", pa.string()),
        ("subject_ids", pa.list_(pa.string())), ("reason", pa.string()), ("run_id", pa.string()),
        ("created_at", pa.timestamp("us")),
    ]))
    with db.registered(con, "incoming_reviews", table):
        db.execute(con, "queries/queue_reviews")


# ---------------------------------------------------------------- merge


def _ensure_pairs(ctx: StageContext, embedder: Embedder) -> None:
    """When this run's confidence stage did not run (stages chosen by hand), search the pairs now."""
    with db.open_store(ctx.settings) as con:
        if completed_counts(con, ctx.run_id, ctx.user_id, "confidence") is not None:
            return
        changed = {r[0] for r in db.rows(con, "queries/run_new_facts", user_id=ctx.user_id, run_id=ctx.run_id)}
    facts, fvecs, _ = _fact_matrix(ctx, embedder)
    pairs, _ = _fact_pairs(ctx, facts, fvecs, changed, ctx.settings.merge_threshold, judge=False)  # judged below
    if not ctx.dry_run:
        with db.open_store(ctx.settings) as con, db.transaction(con):
            store_pairs(con, ctx, pairs)


def merge(ctx: StageContext, embedder: Embedder) -> dict[str, Any]:
    """Merge near-duplicates among changed facts vs all active facts; ambiguous ones are queued."""
    s = ctx.settings

    def body() -> tuple[dict[str, Any], Callable[[db.Connection], None] | None]:
        _ensure_pairs(ctx, embedder)
        with db.open_store(s) as con:
            pairs = db.query(con, "queries/run_fact_pairs", user_id=ctx.user_id, run_id=ctx.run_id,
                             as_of=ctx.as_of, rate=s.decay_rate)
            contradicted = _existing_pairs(con, ctx.user_id, "contradiction")
            queued = _existing_pairs(con, ctx.user_id, "merge")
            similar = pairs.filter(pl.col("similarity") > s.merge_threshold)
            conflicting = {frozenset((r["fact_a"], r["fact_b"])) for r in similar.filter(
                pl.col("conflict").is_not_null()).iter_rows(named=True)} | contradicted
            candidates = [(a, b, c, same) for a, b, c, same
                          in similar.select("fact_a", "fact_b", "similarity", "same_statement").iter_rows()
                          if frozenset((a, b)) not in conflicting]
            # the confidence stage judged most of them; a pair it did not (a run resumed from an older
            # engram, stages chosen by hand, a lower threshold here) is judged now
            unjudged = [i for i, (*_, same) in enumerate(candidates) if same is None]
            texts = _fact_texts(con, ctx.user_id, [x for i in unjudged for x in candidates[i][:2]]) if unjudged else {}
        verdicts = rule_pool.apply(merge_screen.same_statements, [
            (texts[candidates[i][0]], texts[candidates[i][1]], candidates[i][2], s.merge_threshold) for i in unjudged],
            s.rule_workers, batched=True)
        same = [judged for *_, judged in candidates]
        for i, verdict in zip(unjudged, verdicts, strict=True):
            same[i] = verdict
        agree = [(a, b) for (a, b, _, _), ok in zip(candidates, same, strict=True) if ok]
        comps = components(agree)
        infos: dict[str, FactInfo] = {}
        evidence: dict[str, int] = {}
        merging = list({fid for comp in comps for fid in comp})  # only they are planned (a night at 1M: ~1k of 250k)
        for r in similar.filter(pl.col("fact_a").is_in(merging) | pl.col("fact_b").is_in(merging)).iter_rows(named=True):
            for side in ("a", "b"):
                fid = r[f"fact_{side}"]
                infos[fid] = FactInfo(fid, r[f"confidence_{side}"], r[f"category_{side}"],
                                      int(r[f"created_{side}"].timestamp() * 1e6))
                evidence[fid] = r[f"evidence_{side}"]
        plan = plan_merges(comps, infos, conflicting, s.auto_merge_min_confidence,
                           {frozenset(pair) for pair in agree})
        reviews = [_review(ctx, "merge", comp, why) for comp, why in plan.reviews if frozenset(comp) not in queued]
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

        return counts, write

    return run_stage(ctx, "merge", body)


# ---------------------------------------------------------------- deprecate


def deprecate(ctx: StageContext) -> dict[str, Any]:
    """Facts whose decayed confidence fell below the floor become deprecated (kept, not retrieved)."""
    s = ctx.settings

    def body() -> tuple[dict[str, Any], Callable[[db.Connection], None] | None]:
        with db.open_store(s) as con:
            due = db.rows(con, "queries/deprecation_candidates", user_id=ctx.user_id, as_of=ctx.as_of,
                          rate=s.decay_rate, threshold=s.deprecate_below)
        changes = [
            fact_ops.FactChange(fid, "deprecated", f"confidence {c:.3f} < {s.deprecate_below}",
                                confidence=float(c), status="deprecated")
            for fid, c in due
        ]
        return {"deprecated": len(changes)}, (
            lambda con: fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, changes, ctx.as_of))

    return run_stage(ctx, "deprecate", body)


# ---------------------------------------------------------------- embed / publish


def embed_pending(ctx: StageContext, embedder: Embedder) -> dict[str, Any]:
    """Drain the tenant's embedding queue (episodes, then facts)."""
    from engram.embed.queue import drain

    if ctx.dry_run:
        return {"dry_run": True}
    return {
        "episodes": drain(ctx.settings, embedder, "episodes", ctx.user_id),
        "facts": drain(ctx.settings, embedder, "facts", ctx.user_id),
    }


def tenants_with_work(settings: Settings, as_of: datetime) -> list[str]:
    """Tenants with anything for the nightly run to do (queued reviews count only when an LLM can decide them)."""
    with db.open_store(settings) as con:
        return [r[0] for r in db.rows(con, "queries/tenants_with_work", as_of=as_of, with_llm=settings.llm != "none",
                                      rate=settings.decay_rate, threshold=settings.deprecate_below,
                                      retire_before=as_of - timedelta(days=settings.retention_days))]


def resolve(ctx: StageContext, llm: Any) -> dict[str, Any]:
    """Stage 5: batched LLM decisions on queued reviews; with no LLM the cases stay queued."""

    def body() -> tuple[dict[str, Any], Callable[[db.Connection], None] | None]:
        if llm is None:
            return {"llm": "none", "requests": 0}, None
        if ctx.dry_run:
            return {"requests": 0, "note": "dry run: no LLM calls"}, None
        if ctx.settings.llm_mode == "batch":
            return {"requests": 0, "mode": "batch", "note": "cases go into the run's batch job"}, None
        from engram.consolidate.resolve import resolve_pending

        return dict(resolve_pending(ctx.settings, llm, ctx.user_id, ctx.run_id, ctx.as_of)), None

    return run_stage(ctx, "resolve", body)


def publish(ctx: StageContext, embedder: Embedder) -> dict[str, Any]:
    """Stage 8: embed facts whose text changed; write the tenant's on-disk search indexes; the run's changes."""
    from engram.embed.queue import drain
    from engram.query import persisted

    embedded = 0 if ctx.dry_run else drain(ctx.settings, embedder, "facts", ctx.user_id)
    with db.open_store(ctx.settings) as con:
        changes = db.query(con, "queries/run_fact_changes", user_id=ctx.user_id, run_id=ctx.run_id)
        indexes = ({} if ctx.dry_run or not ctx.settings.search_index else
                   persisted.write_tenant(ctx.settings, con, ctx.user_id, embedder.model, embedder.dim, ctx.run_id))
    return {"facts_embedded": embedded, "indexes": indexes, "changes": changes.to_dicts()}


def stage_summary(counts: dict[str, Any]) -> str:
    """A log line for a stage's result: its numbers, flags and list sizes, never memory text; or its error."""
    if "failed" in counts:
        return f"failed: {counts['failed']}"
    parts = [f"{k}={v}" for k, v in counts.items() if isinstance(v, int | float)]
    parts += [f"{k}={len(v)}" for k, v in counts.items() if isinstance(v, list)]
    return " ".join(parts) or "done"


def tenant_summary(results: dict[str, Any]) -> str:
    """One log line for a tenant's stages: each with its numbers (stage_summary)."""
    return " ".join(f"{stage}[{stage_summary(counts)}]" for stage, counts in results.items())


def run_tenant(
    settings: Settings,
    user_id: str,
    run_id: str,
    as_of: datetime,
    stages: list[str] | tuple[str, ...] = STAGES,
    dry_run: bool = False,
    embedder: Embedder | None = None,
    llm: Any = None,
    on_stage: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Every chosen stage for one tenant, in pipeline order, under the tenant's lease (no Prefect).

    on_stage(stage, counts) is called as each stage ends (counts {"failed": error} for the one that raised).
    """
    from engram import embed as embedders
    from engram.store.runs import run_steps, tenant_lease

    embedder = embedder or embedders.from_settings(settings)
    ctx = StageContext(settings, user_id, run_id, as_of, dry_run, checked=True)  # the steps run through run_steps
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "embed": lambda: embed_pending(ctx, embedder),
        "extract": lambda: extract(ctx, embedder, llm),
        "confidence": lambda: confidence(ctx, embedder),
        "merge": lambda: merge(ctx, embedder),
        "resolve": lambda: resolve(ctx, llm),
        "deprecate": lambda: deprecate(ctx),
        "archive": lambda: archive(ctx),
        "publish": lambda: publish(ctx, embedder),
    }
    # one open store for the tenant's stages; a failing stage is recorded on its runs row
    with db.held_open(settings), tenant_lease(settings, user_id, run_id):
        return run_steps(settings, user_id, run_id, as_of, {s: steps[s] for s in STAGES if s in stages}, dry_run,
                         on_stage=on_stage)


def archive(ctx: StageContext) -> dict[str, Any]:
    """Stage 7: retired rows past retention to the verified archive (engram.archive.ops.archive_due)."""
    from engram.archive.ops import archive_due

    return archive_due(ctx.settings, ctx.user_id, ctx.as_of, ctx.run_id, dry_run=ctx.dry_run)
