"""Resharding moves every tenant's rows of every table, verified, and survives a crash at any point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.consolidate.runner import STAGES
from engram.consolidate.shards import consolidate_shard
from engram.errors import InvalidInput, StoreError
from engram.settings import Settings
from engram.store import db
from engram.store import reshard as rs
from engram.store.ingest import add_episodes_routed
from engram.store.runs import make_run_id
from engram.store.sharding import shard_of, shard_path
from tests.sharding_seed import AS_OF, episodes, tenants

N_TENANTS = 6


@pytest.fixture
def seeded(settings: Settings) -> Settings:
    """A 1-shard store with 6 consolidated tenants (facts, sources, events, runs...)."""
    add_episodes_routed(episodes(N_TENANTS), settings)
    consolidate_shard(settings, 0, make_run_id(AS_OF), AS_OF, list(STAGES))
    return settings


def with_shards(settings: Settings, n: int) -> Settings:
    return settings.model_copy(update={"shards": n})


def snapshot(settings: Settings) -> dict[tuple[str, str], list[tuple]]:
    """Every row of every tenant table, per (table, tenant), over the layout's existing shard files."""
    out: dict[tuple[str, str], list[tuple]] = {}
    for k in range(settings.shards):
        path = shard_path(settings, k)
        if not path.exists():
            continue
        with db.connect(path, read_only=True) as con:
            for t in rs.tenant_tables(con):
                for row in con.execute(f'select * from "{t}"').fetchall():  # test-only read of the whole table
                    user = row[[d[0] for d in con.description].index("user_id")]
                    out.setdefault((t, user), []).append(row)
    return {k: sorted(v, key=repr) for k, v in out.items()}


def tenants_by_file(settings: Settings) -> dict[str, set[str]]:
    out = {}
    for k in range(settings.shards):
        path = shard_path(settings, k)
        if path.exists():
            with db.connect(path, read_only=True) as con:
                out[path.name] = {u for t in rs.tenant_tables(con)
                                  for (u,) in con.execute(f'select distinct user_id from "{t}"').fetchall()}
    return out


@pytest.mark.slow
def test_reshard_moves_every_table_and_round_trips(seeded: Settings) -> None:
    before = snapshot(seeded)
    assert {t for t, _ in before} >= {"episodes", "facts", "fact_sources", "fact_events", "runs"}
    report = rs.reshard(seeded, 4)
    assert report["tenants"] == N_TENANTS and report["removed_files"] == [str(seeded.db_path)]
    assert not Path(seeded.db_path).exists()
    four = with_shards(seeded, 4)
    assert snapshot(four) == before
    for name, users in tenants_by_file(four).items():
        assert all(name == shard_path(four, shard_of(u, 4)).name for u in users)
    assert json.loads(rs.manifest_path(seeded).read_text())["status"] == "done"
    rs.reshard(four, 3)
    three = with_shards(seeded, 3)
    assert snapshot(three) == before and not any(shard_path(four, k).exists() for k in range(4))
    rs.reshard(three, 1)
    assert snapshot(seeded) == before
    assert sorted(tenants_by_file(seeded)[Path(seeded.db_path).name]) == tenants(N_TENANTS)


def test_dry_run_writes_nothing(seeded: Settings) -> None:
    before = snapshot(seeded)
    report = rs.reshard(seeded, 2, dry_run=True)
    assert report["tenants"] == sum(m["tenants"] for m in report["moves"]) == N_TENANTS
    assert snapshot(seeded) == before
    assert not any(shard_path(seeded, k, 2).exists() for k in range(2))
    assert not rs.manifest_path(seeded).exists()


@pytest.mark.slow
@pytest.mark.parametrize("crash_in", ["_digests", "_save_manifest"])
def test_crash_midway_then_rerun_completes_without_duplicates(seeded, monkeypatch, crash_in: str) -> None:
    """A crash after a batch is copied (before its verify) or after its source delete (before the manifest)."""
    before = snapshot(seeded)
    real = getattr(rs, crash_in)
    calls = {"n": 0}

    def crashing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(rs, crash_in, crashing)
    with pytest.raises(KeyboardInterrupt):
        rs.reshard(seeded, 4, batch=1)
    monkeypatch.setattr(rs, crash_in, real)
    four = with_shards(seeded, 4)
    mid = {**snapshot(seeded), **snapshot(four)}
    assert set(mid) == set(before)  # every tenant is somewhere
    assert json.loads(rs.manifest_path(seeded).read_text())["status"] == "running"
    with pytest.raises(InvalidInput, match="unfinished"):
        rs.reshard(seeded, 2)
    rs.reshard(seeded, 4, batch=1)
    assert snapshot(four) == before  # nothing lost, nothing duplicated
    assert not Path(seeded.db_path).exists()
    assert json.loads(rs.manifest_path(seeded).read_text())["status"] == "done"


def test_failed_verification_keeps_the_source(seeded, monkeypatch) -> None:
    before = snapshot(seeded)
    real = rs._digests

    def tampered(con, tables, users, prefix=""):
        got = real(con, tables, users, prefix)
        return got if prefix else {k: (n + 1, d) for k, (n, d) in got.items()}

    monkeypatch.setattr(rs, "_digests", tampered)
    with pytest.raises(StoreError, match="verification failed"):
        rs.reshard(seeded, 2)
    assert snapshot(seeded) == before


def test_bad_target_is_rejected(seeded) -> None:
    for bad in (0, 5000):
        with pytest.raises(InvalidInput, match="to:"):
            rs.reshard(seeded, bad)


def test_a_tenant_in_two_shards_stops_the_plan(seeded) -> None:
    rs.reshard(seeded, 2)
    two = with_shards(seeded, 2)
    user = tenants(N_TENANTS)[0]
    other = shard_path(two, 1 - shard_of(user, 2))
    with db.connect(other) as con:  # a misrouted write
        con.execute("insert into run_leases (user_id, run_id, holder, acquired_at, expires_at)"
                    " values ($u, 'r', 'h', now(), now())", {"u": user})
    with pytest.raises(StoreError, match="has rows in shards"):
        rs.reshard(two, 3)
