"""Tenant sharding: which DuckDB shard file holds a tenant, and per-shard settings for fan-out.

A tenant (user_id) lives in exactly one shard file, chosen by a stable hash of its id. With
`shards = 1` (the default) the single shard is settings.db_path itself, so an unsharded store
needs no change. Every function in engram opens the store from `settings.db_path`, so routing is
"swap db_path before calling": settings_for_tenant for one tenant, all_shard_settings to fan out.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

from blake3 import blake3

from engram.errors import InvalidInput
from engram.settings import Settings

log = logging.getLogger(__name__)

MAX_SHARDS = 4096


def shard_of(user_id: str, n: int) -> int:
    """The shard (0..n-1) of a tenant: blake3 of the UTF-8 user_id, first 8 bytes big-endian, mod n.

    Stable across processes, machines and Python versions (never Python's salted hash()).
    """
    if not isinstance(n, int) or not 1 <= n <= MAX_SHARDS:
        raise InvalidInput(f"shards: must be an integer in 1..{MAX_SHARDS}, got {n!r}")
    if not isinstance(user_id, str) or not user_id:
        raise InvalidInput("user_id: required to choose a shard")
    return int.from_bytes(blake3(user_id.encode("utf-8")).digest()[:8], "big") % n


def shard_path(settings: Settings, k: int, n: int | None = None) -> Path:
    """The file of shard k of n (n defaults to settings.shards); a 1-shard store is db_path itself."""
    n = settings.shards if n is None else n
    if not 0 <= k < n:
        raise InvalidInput(f"shard: {k} is not in 0..{n - 1}")
    base = Path(settings.db_path)
    if n == 1:
        return base
    return base.with_name(f"{base.stem}.shard-{k}-of-{n}{base.suffix or '.duckdb'}")


def shard_settings(settings: Settings, k: int, n: int | None = None) -> Settings:
    """Settings whose db_path is shard k (of n, default settings.shards); archive_dir stays shared."""
    n = settings.shards if n is None else n
    if n == 1 and settings.shards == 1:
        return settings
    # archive paths already carry the tenant and run id, so shards can share one archive_dir
    return settings.model_copy(update={"db_path": shard_path(settings, k, n), "shards": n})


def settings_for_tenant(settings: Settings, user_id: str) -> Settings:
    """Settings pointing at the shard that holds `user_id` (unchanged for a 1-shard store)."""
    if settings.shards == 1:
        return settings
    return shard_settings(settings, shard_of(user_id, settings.shards))


def all_shard_settings(settings: Settings, existing_only: bool = False) -> list[Settings]:
    """Settings for every shard, in shard order (existing_only: skip shard files not created yet)."""
    out = [shard_settings(settings, k) for k in range(settings.shards)]
    if existing_only and settings.shards > 1:
        out = [s for s in out if Path(s.db_path).exists()]
    return out


def stores_for(settings: Settings, user_id: str | None) -> list[Settings]:
    """The tenant's shard when a tenant is given, else every existing shard (for cross-tenant reads)."""
    if user_id:
        return [settings_for_tenant(settings, user_id)]
    return all_shard_settings(settings, existing_only=True)


def is_shard_of(settings: Settings) -> bool:
    """Whether settings.db_path is a shard file of the configured layout (or the 1-shard store)."""
    return Path(settings.db_path) in {shard_path(settings, k) for k in range(settings.shards)}


# ---------------------------------------------------------------- routed writes and fan-out


def add_episodes_routed(records: Iterable[Mapping[str, Any]], settings: Settings, **kwargs: Any) -> Any:
    """engram.ingest.add_episodes, with each tenant's rows written to its own shard.

    Every row is validated before anything is written, so a rejected batch writes nothing on any
    shard. Precomputed `embeddings` are split with their rows.
    """
    from engram.ingest import IngestRejected, IngestResult, RowError, add_episodes, validate_record

    if settings.shards == 1:
        return add_episodes(records, settings, **kwargs)
    if kwargs.get("con") is not None:
        raise InvalidInput("con: a sharded store opens each tenant's shard itself; pass no connection")
    records = list(records)
    numbers = kwargs.pop("line_numbers", None) or list(range(1, len(records) + 1))
    default_user = kwargs.get("user_id")
    now = datetime.now()
    groups: dict[int, list[int]] = defaultdict(list)
    invalid: list[RowError] = []
    for i, raw in enumerate(records):
        try:
            row = validate_record(raw, now, default_user=default_user,
                                  require_created_at=kwargs.get("require_created_at", False))
        except ValueError as exc:  # ingest's field error: (field, reason)
            field, reason = (exc.args + ("?", "?"))[:2]
            invalid.append(RowError(numbers[i], str(field), str(reason)))
            continue
        groups[shard_of(row["user_id"], settings.shards)].append(i)
    if invalid and not kwargs.get("skip_invalid", False):
        raise IngestRejected(invalid)
    embeddings = kwargs.pop("embeddings", None)
    total = IngestResult(received=len(records), invalid=invalid)
    ids_by_line: dict[int, str] = {}
    for k in sorted(groups):
        idx = groups[k]
        part = add_episodes(
            [records[i] for i in idx], shard_settings(settings, k), line_numbers=[numbers[i] for i in idx],
            embeddings=None if embeddings is None else embeddings[idx], **kwargs,
        )
        total.inserted += part.inserted
        total.duplicates += part.duplicates
        total.invalid.extend(part.invalid)
        rejected = {e.line for e in part.invalid}
        ids_by_line.update(zip([numbers[i] for i in idx if numbers[i] not in rejected], part.ids, strict=True))
    total.ids = [ids_by_line[n] for n in numbers if n in ids_by_line]  # the input's order
    log.info("ingest routed %d row(s) to %d shard(s)", len(records) - len(invalid), len(groups))
    return total


def tenants_with_work_all(settings: Settings, as_of: datetime) -> list[str]:
    """Tenants with nightly work on any shard (engram.consolidate.tenants_with_work fanned out)."""
    from engram.consolidate import tenants_with_work

    return sorted(u for s in all_shard_settings(settings, existing_only=True) for u in tenants_with_work(s, as_of))


def consolidate_shard(
    settings: Settings, k: int, run_id: str, as_of: datetime, stages: list[str], dry_run: bool = False,
    user_ids: list[str] | None = None, hold_open: bool = True,
) -> dict[str, Any]:
    """Consolidate the tenants with work in shard k, one after another, each under its lease.

    Only shard k's file is opened, so two workers given different shards never share a file.
    A tenant whose lease another run holds is reported as skipped; the other tenants go on.
    hold_open keeps one connection open for the whole shard: the stages' own short connections
    then share the open database instead of reopening and checkpointing the file each time
    (about 4x faster per tenant here), at the price of locking other processes out of this
    shard until it is done.
    """
    from engram import db, embed, llm as llms
    from engram.consolidate import run_tenant, tenants_with_work
    from engram.runs import LeaseHeld, error_text, tenant_failure

    shard = shard_settings(settings, k)
    if settings.shards > 1 and not Path(shard.db_path).exists():
        return {}
    tenants = user_ids if user_ids is not None else tenants_with_work(shard, as_of)
    wrong = [u for u in tenants if shard_of(u, settings.shards) != k]
    if wrong:
        raise InvalidInput(f"user_ids: {len(wrong)} tenant(s) do not belong to shard {k}")
    embedder, llm = embed.from_settings(shard), llms.from_settings(shard)
    results: dict[str, Any] = {}
    with db.connect(shard.db_path, lock_timeout_s=shard.lock_timeout_s) if hold_open else nullcontext():
        for tenant in tenants:
            try:
                results[tenant] = run_tenant(shard, tenant, run_id, as_of, stages, dry_run, embedder=embedder, llm=llm)
            except LeaseHeld as exc:
                log.warning("shard %d: skipped a tenant whose lease is held: %s", k, exc.code)
                results[tenant] = {"skipped": str(exc)}
            except Exception as exc:  # noqa: BLE001 - run_tenant recorded it on the tenant's runs row
                log.error("shard %d: a tenant failed: %s", k, error_text(exc))
                results[tenant] = tenant_failure(exc)
    log.info("shard %d: %d tenant(s) consolidated", k, len(results))
    return results
