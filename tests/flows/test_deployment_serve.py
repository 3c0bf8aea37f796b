"""The deployment machinery: `python -m deployments.serve` against a Prefect server runs a triggered flow."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.settings import PREFECT_API_URL

from engram.store import db
from tests.consolidation_scenario import AS_OF, USER, seed

ROOT = Path(__file__).resolve().parents[2]


def _wait_for_deployment(name: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with get_client(sync_client=True) as client:
            try:
                client.read_deployment_by_name(name)
                return
            except Exception:  # not registered yet
                time.sleep(1)
    raise AssertionError(f"deployment {name} never appeared")


def test_served_manual_deployment_runs_to_completion(settings) -> None:
    seed(settings)
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "engram.deployments.serve"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_deployment("nightly-consolidation/manual")
        with get_client(sync_client=True) as client:
            nightly = client.read_deployment_by_name("nightly-consolidation/nightly")
            assert nightly.schedules and nightly.schedules[0].schedule.cron == "0 3 * * *"
        run = run_deployment(
            "nightly-consolidation/manual", timeout=240,
            parameters={"user_id": USER, "as_of": AS_OF.isoformat(), "stages": ["embed", "extract"]},
        )
        assert run.state is not None and run.state.is_completed(), run.state
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from facts where run_id like 'run-%'").fetchall()[0][0] == 3
