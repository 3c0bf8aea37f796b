"""The nightly flow over a 4-shard store on the default thread pool: per-tenant runs go to the tenant's
shard, the all-tenant run maps one task per shard, and a second run changes nothing."""

from __future__ import annotations

from datetime import timedelta

from engram.flows.nightly import nightly_consolidation
from engram.settings import load_settings
from engram.store import db
from engram.store.ingest import add_episodes_routed
from engram.store.sharding import all_shard_settings, for_tenant
from tests.sharding_seed import AS_OF, episodes, tenants


def facts_by_tenant(settings) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in all_shard_settings(settings, existing_only=True):
        with db.open_store(s) as con:
            out.update(dict(con.execute("select user_id, count(*) from facts where claim_type <> 'digest' "
                                            "group by user_id").fetchall()))
    return out


def test_sharded_nightly_on_threads(settings, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_SHARDS", "4")
    s = load_settings()
    add_episodes_routed(episodes(6), s)
    one = nightly_consolidation(user_id="tenant-01", as_of=AS_OF)
    assert list(one["tenants"]) == ["tenant-01"]
    # per topic, "X." / "X" / "x" are one statement and "Note: x" another: 2 facts x 3 topics (digests aside)
    assert facts_by_tenant(s) == {"tenant-01": 6}
    with db.open_store(for_tenant(s, "tenant-01")) as con:
        assert con.execute("select count(*) from facts where user_id = 'tenant-01' and claim_type <> 'digest'").fetchall() == [(6,)]

    every = nightly_consolidation(as_of=AS_OF)
    assert every["shards"] == [0, 1, 2, 3]
    assert sorted(every["tenants"]) == [u for u in tenants(6) if u != "tenant-01"]  # tenant-01 had no work left
    assert facts_by_tenant(s) == {u: 6 for u in tenants(6)}
    before = {}
    for sh in all_shard_settings(s, existing_only=True):
        with db.open_store(sh) as con:
            before[str(sh.db_path)] = con.execute("select * exclude (embedding) from facts order by all").fetchall()
    again = nightly_consolidation(as_of=AS_OF + timedelta(hours=1))
    assert again["tenants"] == {}
    for sh in all_shard_settings(s, existing_only=True):
        with db.open_store(sh) as con:
            assert con.execute("select * exclude (embedding) from facts order by all").fetchall() == before[str(sh.db_path)]
