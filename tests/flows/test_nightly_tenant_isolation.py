"""One tenant's failure in the nightly run is recorded on its runs row and never stops the other tenants,
in the plain flow and the sharded flow; once the cause is gone the next run archives the failed tenant."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from engram.archive.files import partition_dir
from engram.flows.nightly import nightly_consolidation
from engram.flows.sharded import run_sharded_nightly
from engram.store import db
from tests.archive_scenario import (
    AS_OF,
    DUE,
    OTHER,
    TABLE_KEYS,
    USER,
    archived_ids,
    seed,
    snapshot,
    violations,
)


def block_archive_of(settings, tenant: str) -> Path:
    """A real failure for one tenant only: a plain file where its archive directory must go."""
    blocker = Path(settings.archive_dir) / partition_dir("facts", tenant, AS_OF.date()).rsplit("/", 1)[0]
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a directory")
    return blocker


def tenant_rows(settings, tenant: str) -> dict[str, list]:
    with db.open_store(settings) as con:
        return {t: [r for r in snapshot(con, t) if r[0] == tenant] for t in TABLE_KEYS}


@pytest.mark.parametrize("run", [
    lambda as_of: nightly_consolidation(as_of=as_of, stages=["archive"]),
    lambda as_of: run_sharded_nightly(as_of=as_of, stages=["archive"]),
], ids=["nightly", "sharded"])
def test_a_failing_tenant_is_recorded_and_the_others_are_archived(settings, run) -> None:
    seed(settings)
    assert sorted([OTHER, USER]) == [OTHER, USER]  # the failing tenant comes first
    blocker = block_archive_of(settings, OTHER)
    before = tenant_rows(settings, OTHER)
    result = run(AS_OF)
    assert "failed" in result["tenants"][OTHER]
    assert result["tenants"][USER]["archive"]["archived_facts"] == len(DUE[(USER, "facts")])
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])
        failed = con.execute("select stage, status, error from runs where user_id = $u and run_id = $r",
                             {"u": OTHER, "r": result["run_id"]}).fetchall()
        assert [(s, st) for s, st, _ in failed] == [("archive", "failed")] and "archive_dir" in failed[0][2]
        assert con.execute("select count(*) from archive_exports where status = 'writing'").fetchall() == [(0,)]
        assert con.execute("select count(*) from run_leases").fetchall() == [(0,)]
    assert tenant_rows(settings, OTHER) == before
    blocker.unlink()  # the cause is fixed; the next night archives the tenant
    again = run(AS_OF + timedelta(hours=1))
    assert again["tenants"][OTHER]["archive"]["archived_facts"] == len(DUE[(OTHER, "facts")])
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", OTHER) == sorted(DUE[(OTHER, "facts")])
        assert violations(con) == {}
