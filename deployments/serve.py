"""Serve engram's deployments: the scheduled nightly run, the embedding worker, manual runs of every flow.

    python -m deployments.serve            # long-running: schedules fire, UI "Run" buttons work

Cron and time zone come from ENGRAM_NIGHTLY_CRON / ENGRAM_NIGHTLY_TIMEZONE. The embedding worker
runs for EMBED_RUN_S seconds every EMBED_RUN_S seconds, one run at a time: a run scheduled while
the previous one still drains waits for it, so the queue is drained continuously.

On SIGTERM or Ctrl-C, Prefect pauses the deployments through the API before exiting; when the
server has gone, each call retries for about a minute, so shutdown hung for minutes. The runner
here bounds it: SHUTDOWN_GRACE_S after the signal the process exits (status 1) whatever is left.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from prefect.runner import Runner
from prefect.schedules import Cron, Interval

from engram.flows.embedding import embedding_worker
from engram.flows.nightly import nightly_consolidation
from engram.settings import Settings, load_settings

# Prefect's telemetry is off by default: engram.deployments/__init__.py runs before Prefect is imported.
# prefect.yaml declares the same deployments for a work pool (tests/core/test_deployments_config.py).

# (module, flow attribute, deployment name, description or None for the flow's docstring): manual
# deployments, parameters set in the UI
MANUAL_FLOWS = [
    ("engram.flows.maintenance", "list_removal_candidates_flow", "list-removal-candidates", None),
    ("engram.flows.maintenance", "export_removals_flow", "export-removals", None),
    ("engram.flows.maintenance", "finalize_removal_flow", "finalize-removal", None),
    ("engram.flows.maintenance", "restore_flow", "restore", None),
    ("engram.flows.maintenance", "mark_removal_flow", "mark-removal", None),
    ("engram.flows.maintenance", "archive_retention_flow", "archive-retention", None),
    ("engram.flows.collect", "llm_batch_collection", "llm-batch-collection",
     ("Batch mode (ENGRAM_LLM_MODE=batch): apply the finished Gemini batch jobs now (add a schedule an hour "
      "after the nightly run, or press Run).")),
]

EMBED_RUN_S = 300  # one embedding-worker run lasts this long, and one is scheduled this often


def build_deployments() -> list[Any]:
    """The nightly and embedding-worker deployments (scheduled, one run at a time) and the manual ones."""
    settings = load_settings()
    deployments = [
        nightly_consolidation.to_deployment(
            name="nightly",
            schedules=[Cron(settings.nightly_cron, timezone=settings.nightly_timezone)],
            concurrency_limit=1,
            description="Consolidate every tenant with work, every night.",
            tags=["engram", "nightly"],
        ),
        embedding_worker.to_deployment(
            name="embedding-worker",
            schedules=[Interval(EMBED_RUN_S)],
            parameters={"duration_s": EMBED_RUN_S},
            concurrency_limit=1,
            description=("Embed new episodes and facts continuously: each run drains the queue every "
                         "ENGRAM_EMBED_POLL_S seconds for duration_s seconds; one run at a time, the next starts "
                         "when it ends."),
            tags=["engram", "embedding"],
        ),
        nightly_consolidation.to_deployment(
            name="manual", description="Consolidate on demand: choose user_id, as_of, dry_run, stages.",
            tags=["engram", "manual"],
        ),
    ]
    for module, attr, name, description in MANUAL_FLOWS:
        flow = getattr(importlib.import_module(module), attr)
        deployments.append(flow.to_deployment(name=name, tags=["engram", "maintenance"], description=description))
    return deployments


def store_line(settings: Settings) -> str:
    """Which store (and archive) the served flows use, as absolute paths: relative ones resolve here."""
    store = Path(settings.db_path).resolve()
    shards = f" ({settings.shards} shard files beside it)" if settings.shards > 1 else ""
    return f"store: {store}{shards}; archive: {Path(settings.archive_dir).resolve()} (ENGRAM_DB_PATH, ENGRAM_ARCHIVE_DIR)"


SHUTDOWN_GRACE_S = 7.0  # the graceful shutdown may take this long; the process is gone within 10 s


def _exit_after(seconds: float) -> None:
    """Arm a daemon timer that ends the process if the graceful shutdown has not finished by then."""
    def force() -> None:
        os.write(2, f"serve: shutdown not finished after {seconds:.0f} s (Prefect server unreachable?); "
                    "exiting without pausing the deployments\n".encode())
        os._exit(1)

    timer = threading.Timer(seconds, force)
    timer.daemon = True
    timer.start()


class BoundedShutdownRunner(Runner):
    """Prefect's Runner whose shutdown on SIGTERM cannot outlive SHUTDOWN_GRACE_S."""

    def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
        """Arm the deadline, then shut down as Prefect does: SystemExit leaves start(), whose exit pauses
        the deployments (exit 0).

        Prefect's handler first calls stop(), which inside the running loop only returns astop() (its
        async_dispatch): the coroutine was dropped unawaited, a RuntimeWarning at every shutdown, and
        the exit did the work. Here the exit alone does it; outside a loop, Prefect's handler runs.
        """
        _exit_after(SHUTDOWN_GRACE_S)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            super().handle_sigterm(*args, **kwargs)
            return
        self._logger.info("SIGTERM received, initiating graceful shutdown...")
        sys.exit(0)


def _interrupt(signum: int, frame: Any) -> None:
    _exit_after(SHUTDOWN_GRACE_S)
    raise KeyboardInterrupt


def _terminate(signum: int, frame: Any) -> None:  # until Runner.start installs its own handler
    _exit_after(SHUTDOWN_GRACE_S)
    raise SystemExit(0)


def main() -> None:
    """Serve every deployment until interrupted (what prefect.serve does, with a bounded shutdown)."""
    deployments = build_deployments()
    runner = BoundedShutdownRunner(pause_on_shutdown=True)
    for deployment in deployments:
        runner.add_deployment(deployment)
    print("serving: " + ", ".join(f"{d.flow_name}/{d.name}" for d in deployments), flush=True)
    print(store_line(load_settings()), flush=True)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _terminate)  # Runner.start replaces it with handle_sigterm above
    try:
        asyncio.run(runner.start())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
