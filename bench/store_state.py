"""A store's consolidated state, without wall-clock columns: two runs that did the same work compare equal.

Shared by the crash tests (tests/reliability/test_reliability_crash.py) and the SIGKILL campaign
(bench/perf/stage_kills.py). Each table's statement is bench/sql/state_<table>.sql.
"""

from __future__ import annotations

from typing import Any

from bench.sql import named
from engram.store import db

STATE_TABLES = ("facts", "fact_sources", "fact_events", "llm_reviews", "episodes", "runs")


def store_state(settings: Any) -> dict[str, list[tuple]]:
    """{table: rows} for every table of STATE_TABLES, each in a fixed order."""
    with db.open_store(settings) as con:
        return {table: db.rows(con, named(f"state_{table}")) for table in STATE_TABLES}
