"""The hint after an empty answer: a tenant with no episodes, and the tenants there are.

Apart from engram.store.tenant so that module stays pure (sharding imports it; this one opens stores).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engram.store import db
from engram.store.sharding import all_shard_settings, for_tenant
from engram.store.tenant import normalise_user_id


def unknown_tenant_hint(settings: Any, user_id: str, limit: int = 20) -> str | None:
    """None when the tenant has episodes; else a line saying it has none and naming the tenants there are."""
    user_id = normalise_user_id(user_id)
    own = for_tenant(settings, user_id)
    if Path(own.db_path).is_file():
        with db.open_store(own, read_only=True) as con:
            if db.rows(con, "queries/store/tenant_episode_count", user_id=user_id)[0][0]:
                return None
    tenants: list[tuple[str, int]] = []
    for shard in all_shard_settings(settings, existing_only=True):
        if Path(shard.db_path).is_file():
            with db.open_store(shard, read_only=True) as con:
                tenants += db.rows(con, "queries/store/tenant_list", limit=limit + 1)
    tenants.sort()
    if not tenants:
        return f"tenant {user_id!r} has no episodes, and the store has no tenant yet (add episodes: engram ingest FILE)"
    shown = ", ".join(f"{t} ({n} episode{'s' if n != 1 else ''})" for t, n in tenants[:limit])
    more = " and more (engram sql \"select * from tenants\")" if len(tenants) > limit else ""
    return f"tenant {user_id!r} has no episodes; tenants in this store: {shown}{more}"
