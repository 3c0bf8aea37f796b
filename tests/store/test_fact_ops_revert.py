"""Every consolidation change is reversible: revert_run restores the facts a run changed."""

from __future__ import annotations

from datetime import timedelta

from engram.consolidate.runner import Tools, run_tenant
from engram.embed.models import from_settings
from engram.store import db, fact_ops
from tests.consolidation_scenario import AS_OF, USER, seed

COLUMNS = "id, status, round(confidence, 9), merged_into_id, valid_to"


def test_revert_run_restores_seeded_facts_and_retracts_created_ones(settings) -> None:
    seed(settings)
    with db.open_store(settings) as con:
        before = con.execute(f"select {COLUMNS} from facts order by id").fetchall()  # noqa: S608
    run_tenant(settings, USER, "run-r", AS_OF, ["embed", "extract", "confidence", "merge", "deprecate"],
               Tools(from_settings(settings)))
    with db.open_store(settings) as con, db.transaction(con):
        # a supersede in the same run must be undone too (valid_to cleared)
        fact_ops.apply_changes(con, USER, "run-r", [fact_ops.FactChange(
            "f_coffee", "superseded", "test", status="superseded", valid_to=AS_OF)], AS_OF)
        n = fact_ops.revert_run(con, USER, "run-r", AS_OF + timedelta(hours=1))
    assert n > 0
    with db.open_store(settings) as con:
        seeded = con.execute(f"select {COLUMNS} from facts where run_id is null order by id").fetchall()  # noqa: S608
        created = con.execute("select status from facts where run_id = 'run-r'").fetchall()
        reverted = con.execute("select count(*) from fact_events where action = 'reverted'").fetchall()[0][0]
    assert seeded == before
    assert created and {s for (s,) in created} == {"retracted"}
    assert reverted == n
