"""Archive paths are safe for any valid user_id: a 300-character or multi-byte tenant id archives and
restores, short ids keep their hive paths, and an interrupted export with an impossible path is
cleaned by the next run instead of blocking every tenant."""

from __future__ import annotations

import json
import os
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from engram.archive import ops as archive
from engram.archive.files import MANIFEST_DIR, partition_dir
from engram.archive.nightly import archive_due
from engram.archive.restore import restore
from engram.store import db
from engram.store.ingest import add_episodes
from tests.archive_scenario import AS_OF, DUE, USER, archived_ids, seed, violations

LONG = "tenant-" + "x" * 293          # 300 ASCII characters
WIDE = "ü" * 100 + "/" + "名" * 100   # 201 characters, 900+ bytes once percent-quoted


def seed_tenant(settings, tenant: str) -> None:
    add_episodes([{"id": f"e{i}", "user_id": tenant, "content": f"episode {i} of a long tenant", "session_id": "s",
                   "role": "user", "created_at": AS_OF - timedelta(days=60)} for i in range(3)], settings)
    archive.mark_removal(settings, tenant, ["e0", "e1"], table="episodes", now=AS_OF - timedelta(days=40))


def live_episodes(settings, tenant: str) -> list[str]:
    with db.open_store(settings) as con:
        return [r[0] for r in con.execute("select id from episodes where user_id = $u order by id",
                                          {"u": tenant}).fetchall()]


@pytest.mark.parametrize("tenant", [LONG, WIDE], ids=["ascii-300", "multibyte"])
def test_a_long_user_id_archives_and_restores(settings, tenant: str) -> None:
    seed_tenant(settings, tenant)
    counts = archive_due(settings, tenant, AS_OF, "run-long")
    assert counts["archived_episodes"] == 2
    assert live_episodes(settings, tenant) == ["e2"]
    root = Path(settings.archive_dir)
    files = sorted(root.rglob("*.parquet"))
    assert len(files) == 1
    for part in files[0].relative_to(root).parts:
        assert len(part.encode()) <= 255
    # the manifest (store and json) records the real tenant and the path actually used
    exports = archive.list_exports(settings, user_id=tenant)
    assert [(x["user_id"], x["status"]) for x in exports] == [(tenant, "finalized")]
    assert root / exports[0]["path"] == files[0]
    entry = json.loads((root / MANIFEST_DIR / f"{exports[0]['export_id']}.json").read_text())
    assert (entry["user_id"], entry["path"]) == (tenant, exports[0]["path"])
    with db.open_store(settings) as con:  # the rows carry the exact tenant id (read without hive columns)
        got = con.execute("select distinct user_id from read_parquet($p, hive_partitioning = false)",
                          {"p": str(files[0])}).fetchall()
        assert got == [(tenant,)]
        hive = con.execute("select count(*) from read_parquet($g, hive_partitioning = true)",
                           {"g": str(root / "**" / "*.parquet")}).fetchall()
        assert hive == [(2,)]  # hive-partitioned reads still work over the whole archive
        assert violations(con) == {}
    restored = restore(settings, tenant)
    assert restored["rows"]["episodes"] == 2
    assert live_episodes(settings, tenant) == ["e0", "e1", "e2"]


def test_short_user_ids_keep_their_hive_paths() -> None:
    day = date(2026, 3, 1)
    assert partition_dir("facts", "alice", day) == "table=facts/user_id=alice/date=2026-03-01"
    assert partition_dir("episodes", "u/2 odd", day) == "table=episodes/user_id=u%2F2%20odd/date=2026-03-01"
    capped = partition_dir("facts", LONG, day).split("/")[1]
    assert len(capped.encode()) <= 255 and capped.startswith("user_id=tenant-xxx")
    assert capped != partition_dir("facts", LONG + "y", day).split("/")[1]  # distinct tenants, distinct dirs


def test_an_interrupted_export_with_an_impossible_path_is_cleaned_not_blocking(settings) -> None:
    seed(settings)
    seed_tenant(settings, LONG)
    legacy = f"{partition_dir('episodes', 'u', AS_OF.date()).replace('user_id=u', 'user_id=' + LONG)}/run-old-1.parquet"
    with db.open_store(settings) as con:  # what an older version left behind (OSError 36 before any file)
        db.execute(con, "queries/archive/archive_insert_export", export_id="ax_legacy", batch_id=f"run-old/{LONG}",
                   run_id="run-old", user_id=LONG, table_name="episodes", partition_date=AS_OF.date(), path=legacy,
                   note=f"writer={os.uname().nodename}:999999999", now=datetime(2000, 1, 1))
    counts = archive_due(settings, USER, AS_OF, "run-next")  # another tenant is not blocked
    assert counts["archived_facts"] == len(DUE[(USER, "facts")])
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])
    assert [x["status"] for x in archive.list_exports(settings, user_id=LONG)] == ["abandoned"]
    assert archive_due(settings, LONG, AS_OF, "run-next")["archived_episodes"] == 2  # and it retries
