"""Tenant sharding: which DuckDB shard file holds a tenant, and per-shard settings for fan-out.

A tenant (user_id) lives in exactly one shard file, chosen by a stable hash of its id. With
`shards = 1` (the default) the single shard is settings.db_path itself, so an unsharded store
needs no change. Every function in engram opens the store from `settings.db_path`, so routing is
"swap db_path before calling": for_tenant for one tenant (called once, at the boundary of the public
API, the CLI and the MCP server), all_shard_settings to fan out.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from blake3 import blake3

from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store.tenant import normalise_user_id

log = logging.getLogger(__name__)

MAX_SHARDS = 4096
_SHARD_STEM = re.compile(r"^(?P<base>.+)\.shard-\d+-of-\d+$")


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
    if n == 1:
        return Path(settings.db_path)
    base = base_path(Path(settings.db_path))
    return base.with_name(f"{base.stem}.shard-{k}-of-{n}{base.suffix or '.duckdb'}")


def shard_settings(settings: Settings, k: int, n: int | None = None) -> Settings:
    """Settings whose db_path is shard k (of n, default settings.shards); archive_dir stays shared."""
    n = settings.shards if n is None else n
    if n == 1 and settings.shards == 1:
        return settings
    # archive paths already carry the tenant and run id, so shards can share one archive_dir
    return settings.model_copy(update={"db_path": shard_path(settings, k, n), "shards": n})


def base_path(path: Path) -> Path:
    """The layout's base path of a shard file (a path that is no shard file is its own base).

    Routing an already routed Settings must land on the same file, not on `x.shard-0-of-2.shard-1-of-2`.
    """
    match = _SHARD_STEM.match(path.stem)
    return path.with_name(match["base"] + path.suffix) if match else path


def for_tenant(settings: Settings, user_id: str) -> Settings:
    """Settings routed to the shard that holds the tenant (unchanged for a 1-shard store).

    user_id is normalised as ingest stores it (NFKC, trimmed; control characters are InvalidInput), so
    'alice ', 'ａｌｉｃｅ' and 'alice' open the same shard. Idempotent: routed settings may be routed again.
    """
    user_id = normalise_user_id(user_id)
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
        return [for_tenant(settings, user_id)]
    return all_shard_settings(settings, existing_only=True)


def is_shard_of(settings: Settings) -> bool:
    """Whether settings.db_path is a shard file of the configured layout (or the 1-shard store)."""
    return Path(settings.db_path) in {shard_path(settings, k) for k in range(settings.shards)}


# ---------------------------------------------------------------- routed writes and fan-out
