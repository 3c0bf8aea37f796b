"""Archive maintenance flows under Prefect: stored rows after each flow, a second run changes nothing."""

from __future__ import annotations

from engram.flows.maintenance import (
    archive_retention_flow,
    export_removals_flow,
    finalize_removal_flow,
    list_removal_candidates_flow,
    mark_removal_flow,
    restore_flow,
)
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


def test_maintenance_flows_export_finalize_restore(settings) -> None:
    seed(settings)
    with db.open_store(settings) as con:
        before = {t: snapshot(con, t) for t in TABLE_KEYS}
    listed = list_removal_candidates_flow(user_id=USER, as_of=AS_OF)
    assert listed["counts"] == {"episodes": 2, "facts": 5, "fact_sources": 6}
    assert export_removals_flow(user_id=USER, as_of=AS_OF, dry_run=True)["files"] == []
    exported = export_removals_flow(user_id=USER, as_of=AS_OF, run_id="ui-run-1")
    assert exported["rows"] == {"facts": 5, "fact_sources": 6, "episodes": 2}
    assert finalize_removal_flow(run_id="ui-run-1")["rows"] == exported["rows"]
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])
        assert violations(con) == {}
    restored = restore_flow(user_id=USER, from_run_id="ui-run-1")
    assert restored["rows"] == {"episodes": 2, "facts": 5, "fact_sources": 6}
    assert restore_flow(user_id=USER)["rows"] == {"episodes": 0, "facts": 0, "fact_sources": 0}
    with db.open_store(settings) as con:
        assert {t: snapshot(con, t) for t in TABLE_KEYS} == before


def test_retention_flow_archives_due_rows_once(settings) -> None:
    seed(settings)
    assert mark_removal_flow(user_id=OTHER, ids=["g_active"])["marked"] == 1
    first = archive_retention_flow(as_of=AS_OF, run_id="nightly-1")
    assert (first["archived_facts"], first["archived_episodes"]) == (6, 3)
    second = archive_retention_flow(as_of=AS_OF)
    assert second["files"] == 0 and second["archived_facts"] == 0
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", OTHER) == ["g_dep"]  # g_active was marked today: not due yet
        assert violations(con) == {}
