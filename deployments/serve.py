"""Serve engram's deployments: the scheduled nightly run plus manual runs of every flow.

    python -m deployments.serve            # long-running: schedules fire, UI "Run" buttons work

Cron and time zone come from ENGRAM_NIGHTLY_CRON / ENGRAM_NIGHTLY_TIMEZONE.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from prefect import serve  # noqa: E402
from prefect.schedules import Cron  # noqa: E402

from engram.flows.nightly import nightly_consolidation  # noqa: E402
from engram.settings import load_settings  # noqa: E402

# (module, flow attribute, deployment name): manual deployments, parameters set in the UI
MANUAL_FLOWS = [
    ("engram.flows.maintenance", "list_removal_candidates_flow", "list-removal-candidates"),
    ("engram.flows.maintenance", "export_removals_flow", "export-removals"),
    ("engram.flows.maintenance", "finalize_removal_flow", "finalize-removal"),
    ("engram.flows.maintenance", "restore_flow", "restore"),
    ("engram.flows.maintenance", "mark_removal_flow", "mark-removal"),
    ("engram.flows.maintenance", "archive_retention_flow", "archive-retention"),
]


def build_deployments() -> list[Any]:
    """The nightly (scheduled, one run at a time) and manual deployments."""
    settings = load_settings()
    deployments = [
        nightly_consolidation.to_deployment(
            name="nightly",
            schedules=[Cron(settings.nightly_cron, timezone=settings.nightly_timezone)],
            concurrency_limit=1,
            description="Consolidate every tenant with work.",
            tags=["engram", "nightly"],
        ),
        nightly_consolidation.to_deployment(
            name="manual", description="Consolidate on demand: choose user_id, as_of, dry_run, stages.",
            tags=["engram", "manual"],
        ),
    ]
    for module, attr, name in MANUAL_FLOWS:
        flow = getattr(importlib.import_module(module), attr)
        deployments.append(flow.to_deployment(name=name, tags=["engram", "maintenance"]))
    return deployments


def main() -> None:
    """Serve every deployment until interrupted."""
    serve(*build_deployments())


if __name__ == "__main__":
    main()
