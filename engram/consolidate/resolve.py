"""Stage 5, resolve: batched LLM decisions on queued reviews, validated, applied through fact_ops.

Reads the pending reviews in a short read, calls the LLM with no connection open, then applies
every valid decision (and records every failure) in one transaction. Replies that fail
validation apply nothing: their cases stay pending with the error and one more attempt counted,
and become 'failed' after MAX_ATTEMPTS. A person can decide a case through the same path.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pyarrow as pa

from engram import clock
from engram.archive.lookup import ArchivedFact, archived_facts
from engram.consolidate.context import StageContext, StagePlan
from engram.consolidate.review_prompts import (
    KINDS,
    REPLY_SCHEMAS,
    Case,
    Decision,
    ReplyRejected,
    Request,
    SubjectFact,
    build_requests,
    check_decision,
    validate_reply,
)
from engram.consolidate.scoring import reinforced
from engram.decay import decayed
from engram.errors import InvalidInput
from engram.llm.base import LLM, LLMBadReply, LLMError, LLMReply, Usage
from engram.llm.usage import record_run_usage, run_tokens_spent
from engram.settings import Settings
from engram.store import db, fact_ops
from engram.text.normalize import stable_id

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # a case whose replies failed this often becomes 'failed' (a person can still decide it)
UNCERTAIN_FACTOR = 0.8  # both_uncertain lowers both (already penalised) confidences once more
LIVE_STATUSES = {"active", "pending_embed", "deprecated"}
STAGE = "resolve"


@dataclass(frozen=True)
class CallMeta:
    """Who decided and this case's share of the request's cost."""

    decided_by: str
    model: str | None = None
    prompt_hash: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class Outcome:
    """What to record on one review row."""

    review_id: str
    status: str
    meta: CallMeta
    decision: dict[str, Any] | None = None
    error: str | None = None
    attempt_inc: int = 1


def _shares(reply: LLMReply | None, model: str, prompt_hash: str, n: int,
            spent: tuple[int, int, float] | None = None) -> list[CallMeta]:
    """Split one request's tokens and cost evenly over its n cases (so sums over rows are right)."""
    inp, out, cost = (reply.input_tokens, reply.output_tokens, reply.cost_usd) if reply else (spent or (0, 0, 0.0))
    latency = reply.latency_ms if reply else None
    return [
        CallMeta(model, model, prompt_hash, inp // n + (1 if i < inp % n else 0),
                 out // n + (1 if i < out % n else 0), latency, cost / n)
        for i in range(n)
    ]


def _failure(case: Case, error: str, meta: CallMeta, attempt_inc: int = 1, final: bool = False) -> Outcome:
    attempts = case.attempts + attempt_inc
    status = "failed" if final or attempts >= MAX_ATTEMPTS else "pending"
    return Outcome(case.review_id, status, meta, error=error[:1000], attempt_inc=attempt_inc)


# ------------------------------------------------------------------ reads


def _ids_table(ids: set[str] | list[str]) -> pa.Table:
    return pa.table({"id": pa.array(sorted(set(ids)), pa.string())})


def load_facts(con: db.Connection, user_id: str, ids: set[str], now: datetime, rate: float) -> dict[str, SubjectFact]:
    """The tenant's facts among ids, confidence decayed to now (other tenants' ids are simply absent)."""
    if not ids:
        return {}
    with db.registered(con, "review_fact_ids", _ids_table(ids)):
        found = db.rows(con, "queries/consolidate/review_subject_facts", user_id=user_id, now=now, rate=rate)
    return {r[0]: SubjectFact(*r) for r in found}


def load_penalties(con: db.Connection, user_id: str, ids: set[str]) -> dict[tuple[str, str], tuple[float, float, datetime]]:
    """(fact_id, run_id) -> (confidence before, after, when) of contradiction penalties on these facts."""
    if not ids:
        return {}
    with db.registered(con, "review_fact_ids", _ids_table(ids)):
        found = db.rows(con, "queries/consolidate/review_penalties", user_id=user_id)
    return {(f, r): (b, a, t) for f, r, b, a, t in found}


def pending_cases(con: db.Connection, user_id: str, kinds: tuple[str, ...]) -> list[Case]:
    """The tenant's pending reviews of these kinds, oldest first."""
    found = db.rows(con, "queries/consolidate/review_pending", user_id=user_id, kinds=list(kinds))
    return [Case(r[0], r[1], tuple(r[2]), r[3], r[4], r[5]) for r in found]


def _subject_problem(case: Case, facts: dict[str, SubjectFact]) -> str | None:
    """Why a case can no longer be decided (a fact is gone or retired), else None."""
    if len(set(case.subject_ids)) < 2 or (case.kind == "contradiction" and len(case.subject_ids) != 2):
        return f"subject_ids: malformed for a {case.kind} case"
    for fid in case.subject_ids:
        fact = facts.get(fid)
        if fact is None:
            return f"stale: fact {fid} does not exist for this tenant"
        if fact.status not in LIVE_STATUSES:
            return f"stale: fact {fid} is {fact.status}"
    return None


# ------------------------------------------------------------------ the stage


def split_stale(cases: list[Case], facts: dict[str, SubjectFact], model: str) -> tuple[list[Outcome], list[Case]]:
    """Cases whose subjects changed or vanished since queueing (final failures) and the live rest."""
    stale: list[Outcome] = []
    live: list[Case] = []
    for case in cases:
        problem = _subject_problem(case, facts)
        if problem:
            stale.append(_failure(case, problem, CallMeta(model), final=True))
        else:
            live.append(case)
    return stale, live


def _zero() -> dict[str, Any]:
    return {"requests": 0, "decided": 0, "applied": 0, "failed": 0, "input_tokens": 0, "output_tokens": 0,
            "cost_usd": 0.0, "skipped_budget": 0, "skipped_unavailable": 0}


def resolve_pending(settings: Settings, llm: LLM | None, user_id: str, run_id: str, now: datetime,
                    kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """Decide the tenant's pending reviews with the LLM and apply the valid decisions in one transaction."""
    counts = _zero()
    if llm is None:
        return counts
    unknown = [k for k in kinds if k not in REPLY_SCHEMAS]
    if unknown:
        raise InvalidInput(f"kinds: unknown {unknown}; choose from {list(REPLY_SCHEMAS)}")
    with db.open_store(settings) as con:
        cases = pending_cases(con, user_id, tuple(kinds))
        facts = load_facts(con, user_id, {f for c in cases for f in c.subject_ids}, now, settings.decay_rate)
        spent = run_tokens_spent(con, run_id, user_id)
    if not cases:
        return counts

    ready: list[tuple[Case, Decision, CallMeta]] = []
    outcomes, live = split_stale(cases, facts, llm.model)
    usage = Usage()
    provider_down = False
    for kind in kinds:
        for request in build_requests(kind, [c for c in live if c.kind == kind], facts, settings.llm_max_prompt_tokens):
            if provider_down:  # the provider already failed after its retries this run: stop calling it
                counts["skipped_unavailable"] += len(request.cases)
                continue
            if spent + request.estimated_tokens > settings.llm_run_token_budget:
                counts["skipped_budget"] += len(request.cases)
                continue
            before = usage.tokens
            result = _call(llm, request, usage)
            spent += usage.tokens - before
            if isinstance(result, Exception):
                provider_down = not isinstance(result, LLMBadReply)
                spent_tokens = result.spent if isinstance(result, LLMBadReply) else None
                metas = _shares(None, llm.model, usage.prompt_hashes[-1], len(request.cases), spent_tokens)
                inc = 1 if isinstance(result, LLMBadReply) else 0  # an outage is not the cases' fault
                outcomes += [_failure(c, f"{type(result).__name__}: {result}", m, inc)
                             for c, m in zip(request.cases, metas, strict=True)]
                continue
            metas = dict(zip((c.review_id for c in request.cases),
                             _shares(result, result.model, result.prompt_hash, len(request.cases)), strict=True))
            try:
                decided, missing = validate_reply(request, result.parsed)
            except ReplyRejected as exc:
                log.warning("resolve user=%s: reply to %d %s case(s) rejected", user_id, len(request.cases), kind)
                outcomes += [_failure(c, f"reply rejected: {exc}", metas[c.review_id]) for c in request.cases]
                continue
            by_id = {c.review_id: c for c in request.cases}
            ready += [(by_id[d.review_id], d, metas[d.review_id]) for d in decided]
            outcomes += [_failure(c, "reply had no decision for this case", metas[c.review_id]) for c in missing]

    with db.open_store(settings) as con, db.transaction(con):
        outcomes += apply_decisions(con, settings, user_id, run_id, now, ready)
        record_outcomes(con, user_id, now, outcomes)
        record_run_usage(con, run_id, user_id, STAGE, usage, now)
    counts.update(
        requests=usage.requests, decided=len(ready),
        applied=sum(o.status == "applied" for o in outcomes),
        failed=sum(o.status != "applied" for o in outcomes),
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=round(usage.cost_usd, 6),
    )
    log.info("resolve user=%s run=%s %s", user_id, run_id, counts)
    return counts


def _call(llm: LLM, request: Request, usage: Usage) -> LLMReply | LLMError:
    try:
        reply = llm.generate(request.prompt, REPLY_SCHEMAS[request.kind])
    except LLMBadReply as exc:
        usage.add_failed(llm.model, request.prompt, exc.spent)
        return exc
    except LLMError as exc:
        usage.add_failed(llm.model, request.prompt, (0, 0, 0.0))
        log.warning("resolve: LLM unavailable (%s); remaining cases stay pending", exc.code)
        return exc
    usage.add(reply)
    return reply


# ------------------------------------------------------------------ apply


def apply_decisions(con: db.Connection, settings: Settings, user_id: str, run_id: str, now: datetime,
                    items: list[tuple[Case, Decision, CallMeta]]) -> list[Outcome]:
    """Apply validated decisions inside the caller's transaction; facts are re-read here, not trusted."""
    if not items:
        return []
    with db.registered(con, "review_ids", _ids_table([c.review_id for c, _, _ in items])):
        open_reviews = {i for i, s in db.rows(con, "queries/consolidate/review_statuses", user_id=user_id)
                        if s in ("pending", "failed", "submitted")}
    ids = {f for c, _, _ in items for f in c.subject_ids}
    facts = load_facts(con, user_id, ids, now, settings.decay_rate)
    penalties = load_penalties(con, user_id, ids)
    outcomes = []
    for case, decision, meta in items:
        if case.review_id not in open_reviews:
            continue  # decided meanwhile (e.g. by a person): leave that decision alone
        problem = _subject_problem(case, facts)
        if problem:
            outcomes.append(_failure(case, problem, meta, final=True))
            continue
        _apply_one(con, settings, user_id, run_id, now, case, decision, facts, penalties)
        outcomes.append(Outcome(case.review_id, "applied", meta, decision.as_json(), None, 1))
    return outcomes


def _restored(fact: SubjectFact, case: Case, penalties: dict[tuple[str, str], tuple[float, float, datetime]],
              now: datetime, rate: float) -> float:
    """Confidence with the contradiction penalty of the case's run undone, never above the pre-penalty value."""
    found = penalties.get((fact.id, case.queued_run_id or ""))
    if not found or not found[1]:
        return fact.confidence
    before, after, when = found
    return min(fact.confidence * before / after, decayed(before, when, now, rate), 1.0)


def _apply_one(con: db.Connection, settings: Settings, user_id: str, run_id: str, now: datetime, case: Case,
               decision: Decision, facts: dict[str, SubjectFact],
               penalties: dict[tuple[str, str], tuple[float, float, datetime]]) -> None:
    why = f"{decision.action} ({case.review_id}): {decision.reason}"
    rate = settings.decay_rate
    changes: list[fact_ops.FactChange] = []
    if case.kind == "contradiction":
        a, b = (facts[f] for f in case.subject_ids)
        if decision.action in ("keep_a", "keep_b"):
            keep, drop = (a, b) if decision.action == "keep_a" else (b, a)
            changes = [
                fact_ops.FactChange(keep.id, "resolved", why, confidence=_restored(keep, case, penalties, now, rate),
                                    related_fact_id=drop.id),
                fact_ops.FactChange(drop.id, "superseded", why, status="superseded", valid_to=now,
                                    related_fact_id=keep.id),
            ]
        elif decision.action == "keep_both":
            changes = [fact_ops.FactChange(f.id, "resolved", why, confidence=_restored(f, case, penalties, now, rate),
                                           related_fact_id=o.id) for f, o in ((a, b), (b, a))]
        else:  # both_uncertain
            changes = [fact_ops.FactChange(f.id, "resolved", why, confidence=f.confidence * UNCERTAIN_FACTOR,
                                           related_fact_id=o.id) for f, o in ((a, b), (b, a))]
    elif decision.action == "merge":
        winner = facts[decision.winner_id or ""]
        losers = [f for f in case.subject_ids if f != winner.id]
        gained = sum(facts[f].evidence_count for f in losers)
        new_conf = reinforced(winner.confidence, gained, settings.support_gain)
        fact_ops.merge(con, user_id, run_id, winner.id, losers, why, now, winner_confidence=new_conf)
        facts[winner.id] = replace(winner, confidence=new_conf, evidence_count=winner.evidence_count + gained)
        for f in losers:
            facts[f] = replace(facts[f], status="merged_into")
        return
    elif decision.action == "keep_both":
        changes = [fact_ops.FactChange(f, "resolved", why) for f in case.subject_ids]
    else:  # contradiction found in a merge case: penalise and queue it like the confidence stage does
        first, second = decision.pair or case.subject_ids[:2]
        changes = [fact_ops.FactChange(f, "contradicted", why, confidence=facts[f].confidence / 2, related_fact_id=o)
                   for f, o in ((first, second), (second, first))]
        queue_contradiction(con, user_id, run_id, now, (first, second), f"merge review {case.review_id}: {decision.reason}")
    fact_ops.apply_changes(con, user_id, run_id, changes, now)
    for change in changes:
        fact = facts[change.fact_id]
        facts[change.fact_id] = replace(fact, status=change.status or fact.status,
                                        confidence=fact.confidence if change.confidence is None else change.confidence)


def queue_contradiction(con: db.Connection, user_id: str, run_id: str, now: datetime, pair: tuple[str, str],
                        reason: str) -> None:
    """Queue a contradiction review for a pair (kept if the pair is already queued)."""
    first, second = sorted(pair)
    table = pa.Table.from_pylist([{
        "id": stable_id("rv", user_id, "contradiction", first, second), "user_id": user_id,
        "kind": "contradiction", "subject_ids": [first, second], "reason": reason[:500], "run_id": run_id,
        "created_at": now,
    }], schema=pa.schema([
        ("id", pa.string()), ("user_id", pa.string()), ("kind", pa.string()), ("subject_ids", pa.list_(pa.string())),
        ("reason", pa.string()), ("run_id", pa.string()), ("created_at", pa.timestamp("us")),
    ]))
    with db.registered(con, "incoming_reviews", table):
        db.execute(con, "queries/consolidate/queue_reviews")


def record_outcomes(con: db.Connection, user_id: str, now: datetime, outcomes: list[Outcome]) -> None:
    """Write decisions, errors, attempts and per-case usage onto the review rows."""
    if not outcomes:
        return
    table = pa.Table.from_pylist([{
        "id": o.review_id, "status": o.status,
        "decision": json.dumps(o.decision) if o.decision is not None else None,
        "decided_by": o.meta.decided_by if o.status == "applied" else None,
        "model": o.meta.model, "prompt_hash": o.meta.prompt_hash, "input_tokens": o.meta.input_tokens,
        "output_tokens": o.meta.output_tokens, "latency_ms": o.meta.latency_ms, "cost_usd": o.meta.cost_usd,
        "error": o.error, "attempt_inc": o.attempt_inc,
    } for o in outcomes], schema=pa.schema([
        ("id", pa.string()), ("status", pa.string()), ("decision", pa.string()), ("decided_by", pa.string()),
        ("model", pa.string()), ("prompt_hash", pa.string()), ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()), ("latency_ms", pa.float64()), ("cost_usd", pa.float64()),
        ("error", pa.string()), ("attempt_inc", pa.int64()),
    ]))
    with db.registered(con, "review_outcomes", table):
        db.execute(con, "queries/consolidate/review_record_outcomes", user_id=user_id, now=now)


# ------------------------------------------------------------------ a person decides


def decide_review(settings: Settings, review_id: str, action: str, reason: str = "", winner: str | None = None,
                  conflicting: list[str] | None = None, user_id: str | None = None,
                  now: datetime | None = None) -> dict[str, Any]:
    """Apply one decision by a person through the same validation and audited apply path."""
    now = now or clock.now()
    with db.open_store(settings) as con, db.transaction(con):
        found = db.rows(con, "queries/consolidate/review_by_id", id=review_id, user_id=user_id)
        if not found:
            raise InvalidInput(f"id: no review {review_id!r}" + (f" for user {user_id!r}" if user_id else ""))
        if len(found) > 1:
            raise InvalidInput(f"id: review {review_id!r} exists for several users; pass --user")
        rid, tenant, kind, status, subjects, why, attempts, queued_run = found[0]
        if status not in ("pending", "failed"):
            raise InvalidInput(f"id: review {review_id!r} is already {status}")
        case = Case(rid, kind, tuple(subjects), why, attempts, queued_run)
        if kind not in REPLY_SCHEMAS:
            raise InvalidInput(f"id: review {review_id!r} is of kind {kind!r}, which cannot be decided here")
        try:
            decision = check_decision(case, action, reason or "decided by a person", winner, conflicting)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        run_id = clock.run_id("human", now, key=rid)  # one decision of one review: its own run
        outcomes = apply_decisions(con, settings, tenant, run_id, now, [(case, decision, CallMeta("human"))])
        if not outcomes or outcomes[0].status != "applied":
            raise InvalidInput(f"id: review {review_id!r} cannot be applied: "
                               + (outcomes[0].error if outcomes else "no longer open"))
        record_outcomes(con, tenant, now, outcomes)
    return {"id": rid, "user_id": tenant, "kind": kind, "run_id": run_id, **decision.as_json()}


def _subject(fact_id: str, facts: dict[str, Any], archived: dict[str, ArchivedFact]) -> dict[str, Any]:
    """A review's fact as listed: live (text, status, confidence now), archived (its archived text), or missing."""
    if fact_id in facts:
        f = facts[fact_id]
        return {"id": fact_id, "text": f.text, "status": f.status, "confidence": round(f.confidence, 3)}
    if fact_id in archived:
        a = archived[fact_id]
        conf = (a.row or {}).get("confidence")
        return {"id": fact_id, "text": a.shown_text, "status": "archived",
                "confidence": None if conf is None else round(conf, 3), "archived": True}
    return {"id": fact_id, "missing": True}


def list_reviews(settings: Settings, user_id: str | None = None, status: str | None = "pending",
                 kind: str | None = None, limit: int = 100, now: datetime | None = None) -> list[dict[str, Any]]:
    """Reviews with the facts they are about (text, status, confidence now), oldest first."""
    now = now or clock.now()
    with db.open_store(settings, read_only=True) as con:
        found = db.rows(con, "queries/consolidate/review_list", user_id=user_id, status=status, kind=kind, limit=limit)
        names = ("id", "user_id", "kind", "status", "subject_ids", "reason", "attempts", "error", "decided_by",
                 "decision", "created_at", "applied_at")
        out = [dict(zip(names, r, strict=True)) for r in found]
        for tenant in {r["user_id"] for r in out}:
            ids = {f for r in out if r["user_id"] == tenant and r["kind"] != "extraction" for f in r["subject_ids"]}
            facts = load_facts(con, tenant, ids, now, settings.decay_rate)
            gone = archived_facts(con, settings, tenant, ids - set(facts))
            for r in out:
                if r["user_id"] == tenant and r["kind"] == "extraction":  # its subjects are episodes
                    r["facts"] = []
                elif r["user_id"] == tenant:
                    r["facts"] = [_subject(f, facts, gone) for f in r["subject_ids"]]
    for r in out:
        r["decision"] = json.loads(r["decision"]) if r["decision"] else None
    return out


def resolve(ctx: StageContext, llm: LLM | None) -> StagePlan:
    """Stage 5: batched LLM decisions on the tenant's queued reviews.

    With no LLM (or in a dry run) the cases stay queued and are counted; in batch mode they go into
    the run's batch job (engram.consolidate.batch). resolve_pending writes its decisions itself.
    """
    if llm is None or ctx.settings.llm_mode == "batch":
        with ctx.open() as con:
            pending = len(pending_cases(con, ctx.user_id, KINDS))
        return StagePlan({"llm": "none", "requests": 0, "pending": pending} if llm is None
                         else {"mode": "batch", "requests": 0, "pending": pending})
    return StagePlan(dict(resolve_pending(ctx.settings, llm, ctx.user_id, ctx.run_id, ctx.as_of)))
