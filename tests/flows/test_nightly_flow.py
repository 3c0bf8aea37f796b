"""The nightly flow under Prefect: stored rows after a run, checks pass, a second run changes nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from engram.flows.nightly import nightly_consolidation
from engram.store import db
from tests.consolidation_scenario import AS_OF, USER, expected, seed

CHECKS = sorted((Path(__file__).resolve().parents[2] / "sql" / "checks").glob("*.sql"))


def violations(con) -> dict[str, int]:
    return {p.stem: len(con.execute(p.read_text()).fetchall()) for p in CHECKS}


def test_nightly_flow_consolidates_and_is_idempotent(settings) -> None:
    seed(settings)
    result = nightly_consolidation(user_id=USER, as_of=AS_OF, stages=[
        "embed", "extract", "confidence", "merge", "digest", "resolve", "deprecate", "publish"])
    stages = result["tenants"][USER]
    assert stages["merge"]["merges"] == 1
    # the stale fact; the side of the contradiction halved below the floor waits for its review
    assert stages["deprecate"]["deprecated"] == 1
    with db.open_store(settings) as con:
        statuses = dict(con.execute("select id, status from facts where user_id = $u", {"u": USER}).fetchall())
        assert sorted(statuses.values()) == sorted(s for _, s in expected().values())
        assert all(n == 0 for n in violations(con).values()), violations(con)
        before = con.execute("select * exclude (embedding) from facts order by id").fetchall()
        events = con.execute("select count(*) from fact_events").fetchall()
    # the next night with nothing new changes nothing, and publishes an empty change set
    later = nightly_consolidation(user_id=USER, as_of=AS_OF + timedelta(hours=1))
    assert later["tenants"][USER]["publish"]["changes"] == []
    with db.open_store(settings) as con:
        assert con.execute("select * exclude (embedding) from facts order by id").fetchall() == before
        assert con.execute("select count(*) from fact_events").fetchall() == events


def test_nightly_flow_without_user_finds_tenants_with_work(settings) -> None:
    seed(settings)
    result = nightly_consolidation(as_of=AS_OF, dry_run=True, stages=["embed", "extract"])
    assert set(result["tenants"]) == {"u1", "u2"} and result["dry_run"] is True
    assert result["tenants"]["u1"]["extract"]["facts_created"] > 0
    with db.open_store(settings) as con:  # the preview ran on a copy
        assert con.execute("select count(*) from runs").fetchall() == [(0,)]
        assert con.execute("select count(*) from facts where run_id is not null").fetchall() == [(0,)]


def test_unknown_stage_is_rejected(settings) -> None:
    with pytest.raises(Exception, match="stages: unknown"):
        nightly_consolidation(stages=["bogus"])
