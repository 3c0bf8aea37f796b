"""With several shards, opening the unsharded path is refused (a caller forgot to route by tenant)."""

from __future__ import annotations

import pytest

from engram.errors import StoreError
from engram.store import db
from engram.store.sharding import for_tenant


def test_base_path_refused_and_tenant_shard_opens(settings) -> None:
    sharded = settings.model_copy(update={"shards": 4})
    with pytest.raises(StoreError, match="ENGRAM_SHARDS=4"):
        with db.open_store(sharded):
            pass
    with db.open_store(for_tenant(sharded, "alice")) as con:
        assert con.execute("select count(*) from episodes").fetchall() == [(0,)]
