"""The other tenants' search indexes after a store rewrite: written again, so none reads as stale.

A published index names rows by their place in the store file; the rewrite renumbers them, so
every index of the rewritten shard would fall back to an exact in-memory search until the next night.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engram.embed.models import from_settings, identity_before_load
from engram.errors import EngramError
from engram.index.disk import index_dir
from engram.index.writer import write_tenant
from engram.store import db

log = logging.getLogger(__name__)


def republish_indexes(settings: Any) -> int:
    """Write again the indexes of every tenant of the store that has some; how many tenants. A failure is
    logged (without tenant names) and left to the next night, which writes them anyway."""
    if not settings.search_index:
        return 0
    done = 0
    try:
        model, dim = identity_before_load(settings) or _identity(settings)
        with db.open_store(settings) as con:
            for (user_id,) in db.rows(con, "erase/tenants_with_rows"):
                if tenant_index_dir(settings, user_id).is_dir():
                    write_tenant(settings, con, user_id, model, dim)
                    done += 1
    except (EngramError, OSError) as exc:
        log.warning("forget: search indexes not written again (%s); the next night writes them",
                    type(exc).__name__)
    return done


def tenant_index_dir(settings: Any, user_id: str) -> Path:
    """The directory of every on-disk search index of the tenant (all tables and embedders)."""
    return index_dir(settings, user_id, "episodes", "any", 1).parent


def _identity(settings: Any) -> tuple[str, int]:
    embedder = from_settings(settings)
    return embedder.model, embedder.dim
