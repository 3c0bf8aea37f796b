"""The one path through a night: the stage registry, a tenant's stages under its lease, each with its runs row.

The flow (one Prefect task per tenant or per stage), the sharded flow, the CLI and the benches all
run a tenant through run_tenant, and a store's tenants through consolidate_tenants. A stage is a
function (StageContext, Tools) -> StagePlan that computes while the store is closed; run_stage writes
the plan and the stage's runs row in one transaction, so a stage this run completed is skipped when
the run is resumed, and a stage that raised is recorded failed and runs again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engram import clock
from engram import embed as embedders
from engram.consolidate.archive import archive
from engram.consolidate.confidence import confidence
from engram.consolidate.context import StageContext, StagePlan, StageResult
from engram.consolidate.deprecate import deprecate
from engram.consolidate.digests import digest
from engram.consolidate.embed import embed_pending
from engram.consolidate.extract import extract
from engram.consolidate.merge import merge
from engram.consolidate.preview import preview_copy
from engram.consolidate.publish import publish
from engram.consolidate.resolve import resolve
from engram.embed.models import Embedder
from engram.errors import InvalidInput, StoreMissing
from engram.settings import Settings
from engram.store import db
from engram.store.crash import crash_point
from engram.store.fold import fold_inbox
from engram.store.runs import (
    LeaseHeld,
    error_text,
    record_failure,
    record_stage,
    recorded_stages,
    tenant_lease,
)
from engram.text.sentences import LASTING_CLAIMS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tools:
    """The models a night uses: the embedder, and the LLM (None offline and in a dry run)."""

    embedder: Embedder
    llm: Any = None


STAGES = ("embed", "extract", "confidence", "merge", "digest", "resolve", "deprecate", "archive", "publish")
REGISTRY: dict[str, Callable[[StageContext, Tools], StagePlan]] = {
    "embed": lambda ctx, t: embed_pending(ctx, t.embedder),
    "extract": lambda ctx, t: extract(ctx, t.embedder, t.llm),
    "confidence": lambda ctx, t: confidence(ctx, t.embedder),
    "merge": lambda ctx, t: merge(ctx, t.embedder),
    "digest": lambda ctx, t: digest(ctx, t.embedder),
    "resolve": lambda ctx, t: resolve(ctx, t.llm),
    "deprecate": lambda ctx, t: deprecate(ctx),
    "archive": lambda ctx, t: archive(ctx),
    "publish": lambda ctx, t: publish(ctx, t.embedder),
}
StageCall = Callable[[str, Callable[[], StageResult]], StageResult]  # how a stage is run: directly, or as a Prefect task
TenantRun = Callable[[Settings, str, Tools], dict[str, StageResult]]


def choose_stages(stages: list[str] | tuple[str, ...] | None) -> list[str]:
    """The requested stages in pipeline order (all when None); unknown names raise InvalidInput."""
    chosen = list(stages or STAGES)
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        raise InvalidInput(f"stages: unknown {unknown}; choose from {list(STAGES)}")
    return [s for s in STAGES if s in chosen]


def run_stage(ctx: StageContext, stage: str, tools: Tools,
              recorded: dict[str, tuple[str, dict[str, Any]]] | None = None) -> StageResult:
    """One stage for one tenant: skipped when this run completed it, else computed, then written with its
    runs row in one transaction. A stage that raises is recorded failed and the error re-raised.

    `recorded` is the run's stage rows for the tenant when the caller read them already.
    """
    if recorded is None:
        with ctx.open() as con:
            recorded = recorded_stages(con, ctx.run_id, ctx.user_id)
    status, done = recorded.get(stage, ("", {}))
    if status == "completed":
        return StageResult(stage, "skipped", done, float(done.get("seconds", 0.0)))
    started, t0 = clock.now(), time.perf_counter()
    try:
        plan = REGISTRY[stage](ctx, tools)
        seconds = round(time.perf_counter() - t0, 3)
        counts = {**plan.counts, "seconds": seconds}
        crash_point(f"{stage}:before_write")
        with ctx.open() as con, db.transaction(con):
            if plan.write is not None:
                plan.write(con)
            crash_point(f"{stage}:mid_write")
            record_stage(con, ctx.run_id, ctx.user_id, stage, ctx.as_of, started, counts)
        crash_point(f"{stage}:after_write")
    except Exception as exc:
        record_failure(ctx.settings, ctx.run_id, ctx.user_id, stage, ctx.as_of, started, exc)
        raise
    log.info("stage %s done", stage, extra={"engram_stage": stage})  # the CLI's progress bar counts these
    return StageResult(stage, "completed", counts, seconds, None if plan.changes is None else tuple(plan.changes))


def run_tenant(
    store: Settings,
    user_id: str,
    run_id: str,
    as_of: datetime,
    stages: list[str] | tuple[str, ...] = STAGES,
    tools: Tools | None = None,
    call: StageCall | None = None,
) -> dict[str, StageResult]:
    """Every chosen stage of one tenant, in pipeline order, under the tenant's lease.

    `store` is the settings of the tenant's store (routed to its shard by the caller). `call` runs each
    stage (default: directly; the flow passes a Prefect task per stage). The first stage that fails
    stops the tenant: its error is raised after it was recorded on its runs row.
    """
    tools = tools or Tools(embedders.from_settings(store))
    ctx = StageContext(store, user_id, run_id, as_of)
    chosen = choose_stages(stages)
    out: dict[str, StageResult] = {}
    # one open store for the tenant's stages: their short connections share it
    with db.held_open(store), tenant_lease(store, user_id, run_id):
        with ctx.open() as con:
            recorded = recorded_stages(con, run_id, user_id)
        for stage in chosen:
            def step(stage: str = stage) -> StageResult:
                return run_stage(ctx, stage, tools, recorded)

            out[stage] = call(stage, step) if call is not None else step()
    return out


def tenants_with_work(store: Settings, as_of: datetime, run_id: str | None = None,
                      stages: list[str] | tuple[str, ...] = STAGES) -> list[str]:
    """Tenants with anything for the night to do, and those run `run_id` began and did not finish with
    every one of `stages` (queued reviews count only when an LLM can decide them). The store's inbox is
    folded first: episodes written while it was held are work too."""
    with db.open_store(store) as con:
        fold_inbox(con, store)
        found = {r[0] for r in db.rows(
            con, "queries/consolidate/tenants_with_work", as_of=as_of, with_llm=store.llm != "none", rate=store.decay_rate,
            lasting=list(LASTING_CLAIMS),
            threshold=store.deprecate_below, retire_before=as_of - timedelta(days=store.retention_days))}
        if run_id is not None:
            found |= {r[0] for r in db.rows(con, "queries/consolidate/tenants_of_run", run_id=run_id, stages=list(stages))}
    return sorted(found)


def consolidate_tenants(
    store: Settings,
    run_id: str,
    as_of: datetime,
    stages: list[str] | tuple[str, ...] = STAGES,
    tenants: list[str] | None = None,
    dry_run: bool = False,
    tools: Tools | None = None,
    run: TenantRun | None = None,
    logger: logging.Logger | logging.LoggerAdapter[Any] = log,
) -> dict[str, dict[str, Any]]:
    """One store's tenants (default: those with work), one after another; {tenant: {stage: summary}}.

    A tenant whose lease another live run holds is reported skipped, one that fails is reported failed
    (its runs row names the stage); the others go on. A dry run runs the same stages on a private copy
    of the store (engram.consolidate.preview) without an LLM, so its counts are what the real run does
    and nothing is written. `run` runs one tenant (default run_tenant; the flow passes a Prefect task).
    """
    results: dict[str, dict[str, Any]] = {}
    with preview_copy(store) if dry_run else nullcontext(store) as target:
        todo = tenants if tenants is not None else tenants_with_work(target, as_of, run_id, choose_stages(stages))
        tools = tools or Tools(embedders.from_settings(target))
        if dry_run:
            tools = Tools(tools.embedder)
        run = run or (lambda s, tenant, t: run_tenant(s, tenant, run_id, as_of, stages, t))
        with db.StoreHold(target, target.hold_store_max_s) as hold:  # one open of the file per few seconds
            for tenant in todo:
                try:
                    results[tenant] = {stage: r.summary() for stage, r in run(target, tenant, tools).items()}
                except StoreMissing:  # the store was removed under the run: no tenant can go on, none is recreated
                    raise
                except LeaseHeld as exc:
                    logger.warning("skipped tenant %s: %s", tenant, exc)
                    results[tenant] = {"skipped": str(exc)}
                except Exception as exc:  # noqa: BLE001 - the failure is the tenant's alone; recorded on its runs row
                    logger.error("tenant %s failed: %s", tenant, error_text(exc))
                    results[tenant] = {"failed": error_text(exc)}
                hold.renew(force="failed" in results[tenant])  # the next tenant never inherits a broken open store
    return results


def tenant_summary(results: dict[str, StageResult]) -> str:
    """One log line for a tenant's stages, each with its numbers (never memory text)."""
    return " ".join(f"{stage}[{r.log_line()}]" for stage, r in results.items())


def failed_tenants(results: dict[str, Any]) -> dict[str, Any]:
    """Only the failed tenants' entries of a run's results: all the snapshot step needs to see."""
    return {t: r for t, r in results.items() if isinstance(r, dict) and isinstance(r.get("failed"), str)}
