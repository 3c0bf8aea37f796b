"""Batch mode (ENGRAM_LLM_MODE=batch): a run's LLM work as one Gemini Batch API job, collected later.

`submit_batch` builds, per tenant, the requests the interactive path would send (never two tenants
in one request), submits them all as one job, then records the job, its items and the cases as
'submitted' in one transaction. `collect_batches` polls the open jobs. A finished job's replies are
validated like interactive replies and applied per tenant in one transaction together with the
item and job rows, so a collection that is killed or repeated applies nothing twice. A lost job
(failed, cancelled, expired, unknown to the provider) puts its cases back in the queue, at most
llm_batch_resubmits times; after that they are 'failed' with the reason and `engram review list`
shows them. A kill between submit and record leaves the cases pending: the next run sends them again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from engram.consolidate import speakers
from engram.consolidate.context import StageContext, vectors_of
from engram.consolidate.extract import fact_rows, statement_drafts
from engram.consolidate.fact_keys import known_statements
from engram.consolidate.llm_extract import (
    OUTPUT_TOKENS_PER_CLUSTER,
    ClusterInput,
    ExtractionReply,
    ExtractionRequest,
    ExtractionResult,
)
from engram.consolidate.llm_extract import build_requests as extraction_requests
from engram.consolidate.llm_extract import validate_reply as validate_extraction
from engram.consolidate.resolve import (
    CallMeta,
    Outcome,
    _failure,
    _shares,
    apply_decisions,
    load_facts,
    record_outcomes,
    split_stale,
)
from engram.consolidate.review_prompts import (
    KINDS,
    REPLY_SCHEMAS,
    Case,
    Decision,
    ReplyRejected,
    Request,
    build_requests,
    validate_reply,
)
from engram.embed.models import Embedder
from engram.llm.base import (
    BatchLLM,
    BatchRequest,
    BatchStatus,
    LLMBadReply,
    LLMError,
    LLMReply,
    Usage,
    estimate_tokens,
    prompt_hash,
)
from engram.llm.usage import record_run_usage, run_tokens_spent
from engram.settings import Settings
from engram.store import db, fact_ops
from engram.store.crash import crash_point

log = logging.getLogger(__name__)

STAGE = "llm_batch"
EXTRACTION_CLUSTER_MAX_CHARS = 1200  # a cluster's members trimmed to this much text (restatements add little)
SCHEMAS: dict[str, type[Any]] = {**REPLY_SCHEMAS, "extraction": ExtractionReply}


@dataclass(frozen=True)
class Item:
    """One request of a tenant for the job, with what is needed to read its reply later."""

    user_id: str
    kind: str
    review_ids: tuple[str, ...]
    aliases: dict[str, Any]
    prompt: str
    estimated_tokens: int


def _ids_table(ids: list[str] | set[str]) -> pa.Table:
    return pa.table({"id": pa.array(sorted(set(ids)), pa.string())})


def _episode_inputs(con: db.Connection, settings: Settings, user_id: str, cases: list[Case]) -> list[ClusterInput]:
    """Each extraction case as a cluster of its episodes (those still in the store)."""
    ids = {e for c in cases for e in c.subject_ids}
    if not ids:
        return []
    with db.registered(con, "wanted_episodes", _ids_table(ids)):
        eps = db.query(con, "queries/consolidate/batch_episodes", user_id=user_id, model=None, dim=None)
    found = {r["id"]: (r["id"], r["role"], r["content"], r["created_at"]) for r in eps.iter_rows(named=True)}
    agents = {e for e, ok in zip(eps["id"].to_list(), speakers.voiced(eps, settings), strict=True) if not ok}
    return [ClusterInput(c.review_id, [found[e] for e in c.subject_ids if e in found],
                         frozenset(e for e in c.subject_ids if e in agents)) for c in cases]


def tenant_items(con: db.Connection, settings: Settings, user_id: str, run_id: str, now: datetime
                 ) -> tuple[list[Item], list[Outcome], int]:
    """The tenant's pending cases as batch items; stale cases as final failures; cases over budget."""
    rows = db.rows(con, "queries/consolidate/review_pending_all_kinds", user_id=user_id)
    cases = [Case(r[0], r[1], tuple(r[2]), r[3], r[4], r[5]) for r in rows]
    review_cases = [c for c in cases if c.kind in KINDS]
    facts = load_facts(con, user_id, {f for c in review_cases for f in c.subject_ids}, now, settings.decay_rate)
    stale, live = split_stale(review_cases, facts, settings.llm_model)
    items: list[Item] = []
    for kind in KINDS:
        for req in build_requests(kind, [c for c in live if c.kind == kind], facts, settings.llm_max_prompt_tokens):
            items.append(Item(user_id, kind, tuple(c.review_id for c in req.cases),
                              {"cases": req.case_alias, "facts": req.fact_alias}, req.prompt, req.estimated_tokens))
    inputs = [c for c in _episode_inputs(con, settings, user_id, [c for c in cases if c.kind == "extraction"]) if c.episodes]
    for ereq in extraction_requests(inputs, settings.llm_max_prompt_tokens, EXTRACTION_CLUSTER_MAX_CHARS):
        items.append(Item(user_id, "extraction", tuple(ereq.episode_alias),
                          {"clusters": ereq.cluster_alias, "episodes": ereq.episode_alias}, ereq.prompt,
                          estimate_tokens(ereq.prompt) + OUTPUT_TOKENS_PER_CLUSTER * len(ereq.cluster_alias)))
    spent = run_tokens_spent(con, run_id, user_id)
    kept, over = [], 0
    for item in items:
        if spent + item.estimated_tokens > settings.llm_run_token_budget:
            over += len(item.review_ids)
            continue
        spent += item.estimated_tokens
        kept.append(item)
    return kept, stale, over


def _zero_submit() -> dict[str, Any]:
    return {"jobs_submitted": 0, "job_name": None, "tenants": 0, "items": 0, "cases": 0, "estimated_tokens": 0,
            "stale": 0, "skipped_budget": 0, "error": None}


def submit_batch(settings: Settings, batch: BatchLLM, run_id: str, now: datetime,
                 user_id: str | None = None) -> dict[str, Any]:
    """Submit every tenant's (or one tenant's) pending cases as one batch job and record it; counts (no memory text)."""
    counts = _zero_submit()
    with db.open_store(settings) as con:
        tenants = [r[0] for r in db.rows(con, "queries/consolidate/batch_tenants_with_pending") if user_id in (None, r[0])]
        built = {u: tenant_items(con, settings, u, run_id, now) for u in tenants}
    stale = {u: s for u, (_, s, _) in built.items() if s}
    if stale:
        with db.open_store(settings) as con, db.transaction(con):
            for tenant, outcomes in stale.items():
                record_outcomes(con, tenant, now, outcomes)
    items = [item for items, _, _ in built.values() for item in items]
    keyed = [(f"i{n:05d}", item) for n, item in enumerate(items, 1)]
    counts.update(stale=sum(len(s) for s in stale.values()), skipped_budget=sum(o for _, _, o in built.values()))
    if not keyed:
        return counts
    requests = [BatchRequest(key, item.prompt, SCHEMAS[item.kind]) for key, item in keyed]
    crash_point("batch:before_submit")
    try:
        job_name = batch.submit(requests, f"engram {run_id}")
    except LLMError as exc:  # the provider refused or did not answer: the cases stay pending for the next run
        log.warning("batch submit failed (%s); %d item(s) stay queued", exc.code, len(keyed))
        counts["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        return counts
    crash_point("batch:after_submit")
    record_submitted(settings, job_name, batch.model, run_id, now, keyed)
    crash_point("batch:after_record")
    counts.update(jobs_submitted=1, job_name=job_name, tenants=len({i.user_id for _, i in keyed}), items=len(keyed),
                  cases=sum(len(i.review_ids) for _, i in keyed),
                  estimated_tokens=sum(i.estimated_tokens for _, i in keyed))
    log.info("batch %s submitted: %d item(s), %d case(s)", job_name, counts["items"], counts["cases"])
    return counts


def record_submitted(settings: Settings, job_name: str, model: str, run_id: str, now: datetime,
                     keyed: list[tuple[str, Item]]) -> None:
    """The job (a row per tenant), its items and the cases as 'submitted', in one transaction."""
    users = sorted({i.user_id for _, i in keyed})
    jobs = pa.Table.from_pylist([
        {"job_name": job_name, "user_id": u, "run_id": run_id, "model": model,
         "items": sum(i.user_id == u for _, i in keyed), "submitted_at": now} for u in users
    ], schema=pa.schema([("job_name", pa.string()), ("user_id", pa.string()), ("run_id", pa.string()),
                         ("model", pa.string()), ("items", pa.int32()), ("submitted_at", pa.timestamp("us"))]))
    items = pa.Table.from_pylist([
        {"job_name": job_name, "item_key": key, "user_id": i.user_id, "run_id": run_id, "kind": i.kind,
         "review_ids": list(i.review_ids), "aliases": json.dumps(i.aliases, sort_keys=True),
         "prompt_hash": prompt_hash(i.prompt), "estimated_tokens": i.estimated_tokens, "submitted_at": now}
        for key, i in keyed
    ], schema=pa.schema([("job_name", pa.string()), ("item_key", pa.string()), ("user_id", pa.string()),
                         ("run_id", pa.string()), ("kind", pa.string()), ("review_ids", pa.list_(pa.string())),
                         ("aliases", pa.string()), ("prompt_hash", pa.string()), ("estimated_tokens", pa.int64()),
                         ("submitted_at", pa.timestamp("us"))]))
    with db.open_store(settings) as con, db.transaction(con):
        with db.registered(con, "incoming_jobs", jobs):
            db.execute(con, "queries/consolidate/batch_insert_jobs")
        with db.registered(con, "incoming_items", items):
            db.execute(con, "queries/consolidate/batch_insert_items")
        for u in users:
            with db.registered(con, "review_ids", _ids_table([r for _, i in keyed if i.user_id == u for r in i.review_ids])):
                db.execute(con, "queries/consolidate/review_mark_submitted", user_id=u)


# ------------------------------------------------------------------ collect


def _zero_collect() -> dict[str, Any]:
    return {"jobs_open": 0, "jobs_waiting": 0, "jobs_collected": 0, "jobs_lost": 0, "jobs_unreachable": 0,
            "items_applied": 0, "items_failed": 0, "items_requeued": 0, "cases_applied": 0, "cases_failed": 0,
            "cases_requeued": 0, "facts_created": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}


def collect_batches(settings: Settings, batch: BatchLLM, run_id: str, now: datetime,
                    embedder: Embedder | None = None) -> dict[str, Any]:
    """Poll every open job; apply what finished, re-queue what was lost; counts (no memory text)."""
    counts = _zero_collect()
    with db.open_store(settings) as con:
        open_rows = db.rows(con, "queries/consolidate/batch_open_jobs")
    jobs: dict[str, list[str]] = {}
    for job_name, user_id, _, _ in open_rows:
        jobs.setdefault(job_name, []).append(user_id)
    counts["jobs_open"] = len(jobs)
    for job_name, users in jobs.items():
        with db.open_store(settings) as con:
            keys = db.rows(con, "queries/consolidate/batch_job_keys", job_name=job_name, user_ids=users)
        try:
            status = batch.poll(job_name, {k: SCHEMAS[kind] for k, kind in keys})
        except LLMError as exc:
            log.warning("batch %s: poll failed (%s); tried again next time", job_name, exc.code)
            counts["jobs_unreachable"] += 1
            continue
        if not (status.done or status.lost):
            with db.open_store(settings) as con, db.transaction(con):
                for u in users:
                    db.execute(con, "queries/consolidate/batch_mark_job_checked", job_name=job_name, user_id=u,
                               provider_state=status.state, now=now)
            counts["jobs_waiting"] += 1
            continue
        for u in users:
            _collect_tenant(settings, batch, job_name, u, status, run_id, now, embedder, counts)
        counts["jobs_lost" if status.lost else "jobs_collected"] += 1
    counts["cost_usd"] = round(counts["cost_usd"], 6)
    log.info("batch collect run=%s %s", run_id, counts)
    return counts


def _item_row(key: str, status: str, reply: LLMReply | LLMError | None, error: str | None) -> dict[str, Any]:
    inp, out, cost = ((reply.input_tokens, reply.output_tokens, reply.cost_usd) if isinstance(reply, LLMReply)
                      else (reply.spent if isinstance(reply, LLMBadReply) and reply.spent else (0, 0, 0.0)))
    return {"item_key": key, "status": status, "input_tokens": inp, "output_tokens": out, "cost_usd": cost,
            "error": error[:1000] if error else None}


def _collect_tenant(settings: Settings, batch: BatchLLM, job_name: str, user_id: str, status: BatchStatus,
                    run_id: str, now: datetime, embedder: Embedder | None, counts: dict[str, Any]) -> None:
    """Apply (or re-queue) one tenant's part of a finished job, with its item and job rows, atomically."""
    with db.open_store(settings) as con:
        items = db.rows(con, "queries/consolidate/batch_job_items", job_name=job_name, user_id=user_id)
        ids = {r for it in items for r in it[2]}
        with db.registered(con, "review_ids", _ids_table(ids)):
            found = db.rows(con, "queries/consolidate/review_cases_by_ids", user_id=user_id)
    cases = {r[0]: Case(r[0], r[1], tuple(r[2]), r[3], r[4], r[5]) for r in found}
    open_ids = {r[0] for r in found if r[6] == "submitted"}
    resubmits = {r[0]: r[7] for r in found}
    usage = Usage()
    outcomes: list[Outcome] = []
    ready: list[tuple[Case, Decision, CallMeta]] = []
    requeue: dict[str, list[str]] = {}   # reason -> review ids sent back to the queue
    item_rows: list[dict[str, Any]] = []
    extracted: list[tuple[Case, ExtractionResult, str]] = []   # (case, result, model)
    for key, kind, review_ids, aliases_json, phash in items:
        mine = [cases[r] for r in review_ids if r in open_ids]
        reply = status.replies.get(key) if status.done else None
        if status.lost or reply is None or (isinstance(reply, LLMError) and not isinstance(reply, LLMBadReply)):
            why = (f"batch job {status.state.removeprefix('JOB_STATE_').lower()}" if status.lost
                   else f"batch item failed: {reply}" if reply is not None else "batch job returned no reply for it")
            requeue.setdefault(why, []).extend(c.review_id for c in mine)
            item_rows.append(_item_row(key, "requeued", reply, why))
            continue
        model = reply.model if isinstance(reply, LLMReply) else batch.model
        spent = (reply.input_tokens, reply.output_tokens, reply.cost_usd) if isinstance(reply, LLMReply) else reply.spent
        metas = _shares(reply if isinstance(reply, LLMReply) else None, model, phash, max(len(mine), 1), spent)
        if isinstance(reply, LLMReply):
            usage.add(reply)
        else:
            usage.add_failed(model, "", spent or (0, 0, 0.0))
        if isinstance(reply, LLMBadReply):
            outcomes += [_failure(c, f"LLMBadReply: {reply}", m) for c, m in zip(mine, metas, strict=False)]
            item_rows.append(_item_row(key, "rejected", reply, str(reply)))
            continue
        aliases = json.loads(aliases_json)
        by_case = dict(zip((c.review_id for c in mine), metas, strict=False))
        if kind == "extraction":
            result = ExtractionResult()
            validate_extraction(ExtractionRequest("", aliases["clusters"], aliases["episodes"]), reply.parsed, result)
            for case in mine:
                if case.review_id in result.failed_clusters:
                    outcomes.append(_failure(case, "reply had no answer for this cluster", by_case[case.review_id]))
                else:
                    extracted.append((case, result, model))
                    facts = result.facts_of(case.review_id)
                    dropped = sum(c == case.review_id for c, _ in result.dropped)
                    outcomes.append(Outcome(case.review_id, "applied", by_case[case.review_id],
                                            {"facts": len(facts), "dropped": dropped}, None, 1))
            item_rows.append(_item_row(key, "applied", reply, None))
            continue
        request = Request(kind, tuple(cases[r] for r in review_ids if r in cases), "", aliases["cases"], aliases["facts"])
        try:
            decided, missing = validate_reply(request, reply.parsed)
        except ReplyRejected as exc:
            log.warning("batch %s user=%s: reply to %d %s case(s) rejected", job_name, user_id, len(mine), kind)
            outcomes += [_failure(c, f"reply rejected: {exc}", by_case[c.review_id]) for c in mine]
            item_rows.append(_item_row(key, "rejected", reply, f"reply rejected: {exc}"))
            continue
        ready += [(cases[d.review_id], d, by_case[d.review_id]) for d in decided if d.review_id in open_ids]
        outcomes += [_failure(c, "reply had no decision for this case", by_case[c.review_id])
                     for c in missing if c.review_id in open_ids]
        item_rows.append(_item_row(key, "applied", reply, None))

    # extraction cases that fail for good fall back to the offline statements of their episodes, like
    # the interactive path does for a cluster the LLM never answered
    final_requeue = {r for rs in requeue.values() for r in rs
                     if resubmits.get(r, 0) + 1 > settings.llm_batch_resubmits}
    fallback = [cases[o.review_id] for o in outcomes if o.status == "failed" and cases[o.review_id].kind == "extraction"]
    fallback += [cases[r] for r in sorted(final_requeue) if cases[r].kind == "extraction"]
    facts, sources = _extraction_rows(settings, user_id, run_id, now, extracted, fallback, embedder)
    state = "lost" if status.lost else "collected"

    crash_point("collect:before_write")
    with db.open_store(settings) as con, db.transaction(con):
        fact_ops.insert_facts(con, user_id, run_id, now, facts, sources)
        outcomes += apply_decisions(con, settings, user_id, run_id, now, ready)
        record_outcomes(con, user_id, now, outcomes)
        for why, rids in requeue.items():
            with db.registered(con, "review_ids", _ids_table(rids)):
                db.execute(con, "queries/consolidate/review_requeue_lost", user_id=user_id, reason=why[:500],
                           max_resubmits=settings.llm_batch_resubmits)
        if item_rows:
            with db.registered(con, "item_outcomes", pa.Table.from_pylist(item_rows, schema=pa.schema([
                ("item_key", pa.string()), ("status", pa.string()), ("input_tokens", pa.int64()),
                ("output_tokens", pa.int64()), ("cost_usd", pa.float64()), ("error", pa.string())]))):
                db.execute(con, "queries/consolidate/batch_close_items", job_name=job_name, user_id=user_id, now=now)
        db.execute(con, "queries/consolidate/batch_close_job", job_name=job_name, user_id=user_id, state=state,
                   provider_state=status.state, run_id=run_id, now=now, error=status.error)
        # collection has no other stage bookkeeping: its runs row is created completed
        record_run_usage(con, run_id, user_id, STAGE, usage, now, status="completed")
        crash_point("collect:mid_write")
    requeued = [r for rs in requeue.values() for r in rs]
    counts["items_applied"] += sum(r["status"] == "applied" for r in item_rows)
    counts["items_failed"] += sum(r["status"] == "rejected" for r in item_rows)
    counts["items_requeued"] += sum(r["status"] == "requeued" for r in item_rows)
    counts["cases_applied"] += sum(o.status == "applied" for o in outcomes)
    counts["cases_failed"] += sum(o.status == "failed" for o in outcomes) + len(final_requeue)
    counts["cases_requeued"] += sum(o.status == "pending" for o in outcomes) + len(requeued) - len(final_requeue)
    counts["facts_created"] += len(facts)
    counts["input_tokens"] += usage.input_tokens
    counts["output_tokens"] += usage.output_tokens
    counts["cost_usd"] += usage.cost_usd


def _extraction_rows(settings: Settings, user_id: str, run_id: str, now: datetime,
                     extracted: list[tuple[Case, ExtractionResult, str]], fallback: list[Case],
                     embedder: Embedder | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Fact rows and sources for the answered extraction cases and the offline fallback of failed ones."""
    if not extracted and not fallback:
        return [], []
    if embedder is None:
        from engram import embed

        embedder = embed.from_settings(settings)
    ids = {e for c, _, _ in extracted for e in c.subject_ids} | {e for c in fallback for e in c.subject_ids}
    with db.open_store(settings) as con:
        with db.registered(con, "wanted_episodes", _ids_table(ids)):
            eps = db.query(con, "queries/consolidate/batch_episodes", user_id=user_id, model=embedder.model, dim=embedder.dim)
    if eps.height == 0:
        return [], []
    vecs = vectors_of(eps["embedding"], embedder.dim)
    position = {eid: i for i, eid in enumerate(eps["id"].to_list())}
    may_state = speakers.voiced(eps, settings)
    voiced_ids = {e for e, ok in zip(eps["id"].to_list(), may_state, strict=True) if ok}
    drafts: list[tuple[str, np.ndarray, str, str | None, str | None, datetime | None]] = []
    for case, result, model in extracted:
        for f in speakers.split_voiced(result.facts_of(case.review_id), voiced_ids)[0]:
            rows = sorted(position[e] for e in f.episode_ids if e in position)
            if rows:
                drafts.append((f.text, np.array(rows), f"llm extraction ({model}, batch)", f.claim_type,
                               f.category, None))
    rows = [position[e] for c in fallback for e in c.subject_ids if e in position and may_state[position[e]]]
    with db.open_store(settings) as con:
        statements = statement_drafts(eps, sorted(set(rows)), lambda keys: known_statements(con, user_id, keys))
    for text, idx, why, moment in statements:
        drafts.append((text, idx, f"extractive: {why}", None, None, moment))
    ctx = StageContext(settings, user_id, run_id, now)
    return fact_rows(ctx, eps, vecs, drafts, embedder)
