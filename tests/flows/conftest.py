"""The one Prefect test harness of the suite (session-scoped: it costs ~15 s to start)."""

from __future__ import annotations

import logging
import os

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(autouse=True, scope="session")
def prefect_harness():
    """Run every flow test against one temporary Prefect server."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
        # the harness logs its server's stop at info after pytest has closed the stream Prefect's console
        # handler writes to: a "--- Logging error ---" traceback at the end of every run, not a failure
        logging.getLogger("prefect").setLevel(logging.WARNING)
