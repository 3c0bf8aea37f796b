"""shard_of is a stable blake3 hash; shard paths and per-tenant settings; the shards setting's bounds."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.settings import load_settings
from engram.store.sharding import (
    all_shard_settings,
    for_tenant,
    shard_of,
    shard_path,
    stores_for,
)


@pytest.mark.parametrize(("user_id", "n", "shard"), [
    # pinned: first 8 bytes of blake3(user_id) big-endian, mod n (a changed hash would move tenants)
    ("alice", 1000, 8192743660908135495 % 1000),
    ("tenant-07", 1000, 10616210739232108358 % 1000),
    ("ü-日本", 1000, 11424328618662752196 % 1000),
    ("alice", 4, 3),
    ("ü-日本", 4, 0),
    ("anyone", 1, 0),
])
def test_shard_of_is_pinned(user_id: str, n: int, shard: int) -> None:
    assert shard_of(user_id, n) == shard


def test_shard_of_is_stable_in_a_fresh_interpreter() -> None:
    """Python's hash() is salted per process; shard_of must not be."""
    import subprocess
    import sys

    code = "from engram.store.sharding import shard_of; print([shard_of(f'u{i}', 97) for i in range(50)])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123"}).stdout.strip()
    assert out == str([shard_of(f"u{i}", 97) for i in range(50)])


def test_shard_of_spreads_tenants_evenly() -> None:
    counts = Counter(shard_of(f"user-{i}", 8) for i in range(8000))
    assert set(counts) == set(range(8))
    assert max(counts.values()) < 1.15 * 1000 and min(counts.values()) > 0.85 * 1000


@pytest.mark.parametrize(("user_id", "n", "field"), [
    ("u", 0, "shards"), ("u", 4097, "shards"), ("u", 2.0, "shards"), ("", 4, "user_id"), (None, 4, "user_id"),
])
def test_shard_of_rejects_bad_input(user_id, n, field) -> None:
    with pytest.raises(InvalidInput, match=field):
        shard_of(user_id, n)


def test_one_shard_is_the_store_itself(settings) -> None:
    assert settings.shards == 1
    assert shard_path(settings, 0) == Path(settings.db_path)
    assert for_tenant(settings, "alice") is settings
    assert all_shard_settings(settings) == [settings]
    assert stores_for(settings, None) == [settings]


def test_shard_paths_and_tenant_settings(tmp_path) -> None:
    s = load_settings(db_path=tmp_path / "mem.duckdb", shards=4)
    assert [shard_path(s, k).name for k in range(4)] == [f"mem.shard-{k}-of-4.duckdb" for k in range(4)]
    t = for_tenant(s, "alice")
    assert t.db_path == tmp_path / "mem.shard-3-of-4.duckdb" and t.shards == 4
    assert t.archive_dir == s.archive_dir  # archive paths carry tenant and run: one shared archive
    assert stores_for(s, None) == []  # no shard file exists yet: nothing to fan out over
    assert [x.db_path for x in stores_for(s, "alice")] == [t.db_path]
    with pytest.raises(InvalidInput, match="shard"):
        shard_path(s, 4)


@pytest.mark.parametrize(("raw", "want"), [("0", 1), ("1", 1), ("16", 16), ("5000", 4096)])
def test_shards_setting_is_clamped(monkeypatch, raw: str, want: int) -> None:
    monkeypatch.setenv("ENGRAM_SHARDS", raw)
    assert load_settings().shards == want
