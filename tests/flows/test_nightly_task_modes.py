"""The nightly flow with one task per tenant (the default, store held across tenants) stores exactly what
the flow with one task per stage and one store open per tenant stored: same facts, events, sources, reviews."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.flows.nightly import nightly_consolidation
from engram.settings import load_settings
from engram.store import db
from engram.store.ingest import add_episodes
from tests.consolidation_scenario import AS_OF, seed
from tests.sharding_seed import episodes

# wall-clock columns (runs timings, fact_sources.created_at) are left out; everything a stage decides is compared
STORED = {
    "facts": "select * exclude (embedding, changed_at) from facts order by user_id, id",  # changed_at: wall clock
    "fact_events": "select * exclude (seq) from fact_events order by user_id, fact_id, action, id",
    "fact_sources": "select * exclude (created_at) from fact_sources order by user_id, fact_id, episode_id, relation",
    "llm_reviews": "select * from llm_reviews order by user_id, id",
    "episodes": "select id, user_id, status, consolidated_run_id from episodes order by user_id, id",
    "runs": "select user_id, stage, status from runs order by user_id, stage",
}


def _night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, env: dict[str, str]) -> dict[str, list]:
    """Seed a fresh store, run the nightly flow over every tenant with env, return its stored rows."""
    monkeypatch.setenv("ENGRAM_DB_PATH", str(tmp_path / name / "engram.duckdb"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    seed(settings)
    add_episodes([{**e, "id": f"shard-seed-{i}"} for i, e in enumerate(episodes(3))], settings)
    result = nightly_consolidation(as_of=AS_OF)
    assert len(result["tenants"]) == 5 and not [t for t, r in result["tenants"].items() if "failed" in r]
    with db.open_reader(settings) as con:
        return {table: con.execute(q).fetchall() for table, q in STORED.items()}


def test_tenant_tasks_store_what_stage_tasks_stored(settings, tmp_path, monkeypatch) -> None:
    per_stage = _night(tmp_path, monkeypatch, "per-stage",
                       {"ENGRAM_NIGHTLY_TASKS": "stage", "ENGRAM_HOLD_STORE_MAX_S": "0"})
    per_tenant = _night(tmp_path, monkeypatch, "per-tenant",
                        {"ENGRAM_NIGHTLY_TASKS": "tenant", "ENGRAM_HOLD_STORE_MAX_S": "5"})
    assert per_stage["facts"] and per_stage["fact_events"] and per_stage["llm_reviews"]
    for table, rows in per_stage.items():
        assert per_tenant[table] == rows, table
