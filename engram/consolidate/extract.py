"""Stage 2, extract: the new episodes' statements become facts, each resting on the episodes that said it.

Reads the tenant's episodes of the reclustering window (the new ones marked), decides the facts
(offline: engram.text.atomic statements; with an LLM: several facts per HDBSCAN cluster, or one
extraction case per cluster in batch mode), and writes the facts, their extracted_from sources and
created events, then marks the new episodes consolidated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from engram.consolidate import fact_keys, speakers, worth
from engram.consolidate.cluster import cluster_embeddings
from engram.consolidate.context import (
    StageContext,
    StagePlan,
    new_review,
    queue_reviews,
    vectors_of,
)
from engram.consolidate.fact_keys import statement_key
from engram.consolidate.fact_rows import fact_row
from engram.consolidate.updates import restatement_runs
from engram.embed.models import Embedder
from engram.llm.base import Usage
from engram.llm.usage import record_run_usage
from engram.store import db, fact_ops
from engram.text.atomic import answered_question, atomic_statements
from engram.text.normalize import content_hash, stable_id

Draft = tuple[str, np.ndarray, str, str | None, str | None, datetime | None]  # text, member rows, reason, type, category, moment


def extract(ctx: StageContext, embedder: Embedder, llm: Any = None) -> StagePlan:
    """Atomic facts from the new episodes: each statement worth remembering, speaker and time resolved.

    Offline, every new human episode's statements (engram.text.atomic) become facts; an agent's own
    turns stay episodes (engram.consolidate.speakers). With an LLM, HDBSCAN clusters of the episodes
    batch its work (several atomic facts per cluster, each citing its episodes, at least one of them
    human); a cluster the LLM fails falls back to the offline statements of its new human episodes.
    """
    s = ctx.settings
    window_start = ctx.as_of - timedelta(days=s.recluster_window_days)
    with ctx.open() as con:
        eps = db.query(con, "queries/consolidate/consolidation_episodes", user_id=ctx.user_id, as_of=ctx.as_of,
                       window_start=window_start, model=embedder.model, dim=embedder.dim)
    new_ids = eps.filter(pl.col("is_new"))["id"].to_list()
    counts: dict[str, Any] = {"episodes": eps.height, "new_episodes": len(new_ids)}
    if not new_ids:
        return StagePlan({**counts, "clusters": 0, "facts_created": 0})
    found = facts_of_episodes(ctx, eps, vectors_of(eps["embedding"], embedder.dim), embedder, llm)
    counts.update(found.counts, facts_created=len(found.facts), watermark=str(eps["created_at"].max()))

    def write(con: db.Connection) -> None:
        fact_ops.insert_facts(con, ctx.user_id, ctx.run_id, ctx.as_of, found.facts, found.sources)
        if found.usage is not None:
            record_run_usage(con, ctx.run_id, ctx.user_id, "extract", found.usage, ctx.as_of)
        queue_reviews(con, found.cases)
        consumed = pa.table({"id": pa.array(new_ids, pa.string())})
        with db.registered(con, "consumed_episodes", consumed):
            db.execute(con, "queries/consolidate/mark_episodes_consolidated", user_id=ctx.user_id, run_id=ctx.run_id)

    return StagePlan(counts, write)


@dataclass
class Extracted:
    """What one extraction found: fact rows, their extracted_from sources, counts, the LLM's usage and
    the extraction cases queued for a batch job."""

    facts: list[dict[str, Any]]
    sources: list[dict[str, Any]]
    counts: dict[str, Any]
    usage: Usage | None = None
    cases: list[dict[str, Any]] = field(default_factory=list)


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


def facts_of_episodes(ctx: StageContext, eps: pl.DataFrame, vecs: np.ndarray, embedder: Embedder,
                      llm: Any) -> Extracted:
    """Candidate facts and their extracted_from sources: the LLM's per cluster when configured, else
    (and for what it fails) the offline statements of the new episodes."""
    s = ctx.settings
    may_state = speakers.voiced(eps, s)
    new_rows = np.flatnonzero(eps["is_new"].to_numpy()).tolist()
    drafts: list[Draft] = []
    offline_rows = new_rows
    counts: dict[str, Any] = {"clusters": 0}
    usage: Usage | None = None
    cases: list[dict[str, Any]] = []
    if llm is not None:
        labels = cluster_embeddings(vecs, s.min_cluster_size, s.pca_dims, s.cluster_min_similarity)
        clusters = [np.flatnonzero(labels == lab) for lab in sorted(set(labels.tolist()) - {-1})]
        counts.update(clusters=len(clusters), noise=int((labels == -1).sum()))
        if clusters and s.llm_mode == "batch":
            # batch mode: each cluster becomes an extraction case for the run's batch job; its facts
            # are written when the job is collected (engram.consolidate.batch)
            ids = eps["id"].to_list()
            clusters = [idx for idx in clusters if may_state[idx].any()]  # agent turns alone state nothing
            cases = [new_review(ctx, "extraction", sorted(ids[int(i)] for i in idx), f"cluster of {len(idx)} episode(s)")
                     for idx in clusters]
            counts["extraction_queued"] = len(clusters)
            covered = {int(i) for idx in clusters for i in idx}
            offline_rows = [i for i in new_rows if i not in covered]
        elif clusters:
            llm_drafts, failed, usage = _llm_drafts(ctx, eps, clusters, llm, counts, may_state)
            drafts += [(t, idx, why, kind, cat, None) for t, idx, why, kind, cat in llm_drafts]
            covered = {int(i) for idx in clusters for i in idx} - {int(i) for idx in failed for i in idx}
            offline_rows = [i for i in new_rows if i not in covered]
    offline_rows = [i for i in offline_rows if may_state[i]]
    counts["agent_episodes"] = int((~may_state[new_rows]).sum()) if new_rows else 0
    with ctx.open() as con:
        statements = statement_drafts(eps, offline_rows, lambda keys: fact_keys.known_statements(
            con, ctx.user_id, keys, store=True))
    statement_vecs: list[np.ndarray | None] = [None] * len(statements)
    counts["statements_not_worth_keeping"] = 0
    if s.fact_filter:
        statements, statement_vecs, counts["statements_not_worth_keeping"] = worth_keeping(eps, statements, embedder)
    known = [None] * len(drafts) + statement_vecs
    drafts += [(t, idx, f"extractive: {why}", None, None, moment) for t, idx, why, moment in statements]
    counts["statements"] = len(statements)
    facts, sources = fact_rows(ctx, eps, vecs, drafts, embedder, known)
    return Extracted(facts, sources, counts, usage, cases)


def worth_keeping(
    eps: pl.DataFrame, statements: list[tuple[str, np.ndarray, str, datetime | None]], embedder: Embedder,
) -> tuple[list[tuple[str, np.ndarray, str, datetime | None]], list[np.ndarray | None], int]:
    """The offline statements worth remembering (engram.consolidate.worth, when it reads this embedder's
    vectors), their vectors as the facts will store them, and how many were left out."""
    if not statements or not worth.applies_to(embedder.model, embedder.dim):
        return statements, [None] * len(statements), 0
    contents, roles = eps["content"].to_list(), eps["role"].to_list()
    vectors = np.asarray(embedder.embed([st[0] for st in statements]), np.float32)
    first = [int(st[1][0]) for st in statements]
    features = [worth.surface_features(st[0], (roles[i] or "").lower() == "user", len(contents[i] or ""))
                for st, i in zip(statements, first, strict=True)]
    keep = worth.worth_keeping(vectors, features)
    kept = [j for j in range(len(statements)) if keep[j]]
    return [statements[j] for j in kept], [vectors[j] for j in kept], len(statements) - len(kept)


def fact_rows(
    ctx: StageContext, eps: pl.DataFrame, vecs: np.ndarray,
    drafts: list[Draft], embedder: Embedder, known: list[np.ndarray | None] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Fact rows and their extracted_from sources for drafts (text, member rows of eps, reason, claim
    type, category, moment); eps/vecs are the episodes the member rows index; `known`: a draft's vector
    when it was embedded already (None: embed it here)."""
    if not drafts:
        return [], []
    contents = eps["content"].to_list()
    known = known or [None] * len(drafts)
    # a statement that is its episode's whole text keeps the episode's vector; the rest are embedded as stored
    same = [v is None and len(d[1]) == 1 and d[0] == contents[int(d[1][0])] for d, v in zip(drafts, known, strict=True)]
    todo = [d[0] for d, keep, v in zip(drafts, same, known, strict=True) if not keep and v is None]
    embedded = iter(embedder.embed(todo) if todo else [])
    fact_vecs = [v if v is not None else vecs[int(d[1][0])] if keep else next(embedded)
                 for d, keep, v in zip(drafts, same, known, strict=True)]
    facts, sources = [], []
    cols = {c: eps[c].to_list() for c in ("id", "visibility", "tags", "created_at", "is_private")}
    for (text, idx, reason, kind, category, moment), vec in zip(drafts, fact_vecs, strict=True):
        members = [int(i) for i in idx]
        member_ids = [cols["id"][i] for i in members]
        fact_id = stable_id("fact", ctx.user_id, content_hash(text), *sorted(member_ids))
        row = fact_row(ctx, fact_id, text, members, cols, vec, embedder, reason, kind, moment)
        if category:
            row["category"] = category
        facts.append(row)
        sims = (vecs[idx] @ vec).tolist()
        sources += [{"fact_id": fact_id, "episode_id": eid, "relation": "extracted_from", "similarity": sim}
                    for eid, sim in zip(member_ids, sims, strict=True)]
    return facts, sources


def _llm_drafts(
    ctx: StageContext, eps: pl.DataFrame, clusters: list[np.ndarray], llm: Any, counts: dict[str, Any],
    may_state: np.ndarray,
) -> tuple[list[tuple[str, np.ndarray, str, str | None, str | None]], list[np.ndarray], Usage]:
    """Atomic facts from the LLM, each resting on the cited episodes (one of them human: an agent's turn
    alone states nothing about the user); failed clusters go extractive."""
    from engram.consolidate.llm_extract import ClusterInput, extract_facts

    s = ctx.settings
    ids = eps["id"].to_list()
    inputs = [
        ClusterInput(f"c{n}", [(r["id"], r["role"], r["content"], r["created_at"])
                               for r in eps[idx.tolist()].iter_rows(named=True)],
                     frozenset(ids[int(i)] for i in idx if not may_state[int(i)]))
        for n, idx in enumerate(clusters)
    ]
    result = extract_facts(llm, inputs, s.llm_max_prompt_tokens, s.llm_run_token_budget)
    position = {eid: i for i, eid in enumerate(ids)}
    kept, agent_only = speakers.split_voiced(result.facts, {e for e, ok in zip(ids, may_state, strict=True) if ok})
    drafts = [
        (f.text, np.array(sorted(position[e] for e in f.episode_ids)), f"llm extraction ({llm.model})",
         f.claim_type, f.category)
        for f in kept
    ]
    failed = set(result.failed_clusters)
    answered = {f.cluster_id for f in result.facts}
    # a cluster the LLM answered with no valid fact stays episodes only; one it never answered goes extractive
    fallback = [idx for n, idx in enumerate(clusters) if f"c{n}" in failed and f"c{n}" not in answered]
    counts.update(llm_facts=len(kept), llm_dropped=len(result.dropped) + agent_only, llm_fallback_clusters=len(fallback),
                  llm=result.usage.as_dict())
    return drafts, fallback, result.usage
