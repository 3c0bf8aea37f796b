"""Prefect's telemetry off by default wherever engram's flows are imported (a user's own setting wins).

Prefect's ephemeral server sends a telemetry heartbeat whose failure on a busy SQLite file prints an
ERROR traceback in the middle of a run, and the first `import prefect` on a terminal prints a usage-data
notice. Both are off when engram's flows, tasks or deployments are imported, unless the environment
already says otherwise. Set before Prefect is imported, and inherited by the ephemeral server's process.
This module does not import Prefect (engram/ never does).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

ANALYTICS = "PREFECT_SERVER_ANALYTICS_ENABLED"   # the server's telemetry service (the heartbeat)
DO_NOT_TRACK = "DO_NOT_TRACK"                    # the SDK's analytics and its first-run notice
FALSE_WORDS = ("0", "false", "no", "off", "")


def quiet_prefect(environ: MutableMapping[str, str] | None = None) -> None:
    """Default Prefect's telemetry to off; an explicitly set variable is left as it is.

    A user who turned server analytics on keeps the SDK's analytics as Prefect ships them too.
    """
    env = os.environ if environ is None else environ
    if env.get(ANALYTICS, "false").strip().lower() not in FALSE_WORDS:
        return
    env.setdefault(ANALYTICS, "false")
    env.setdefault(DO_NOT_TRACK, "1")
