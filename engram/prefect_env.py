"""Prefect's telemetry off by default wherever engram's flows are imported (a user's own setting wins), and
the temporary server's shutdown without its stray traceback.

Prefect's ephemeral server sends a telemetry heartbeat whose failure on a busy SQLite file prints an
ERROR traceback in the middle of a run, and the first `import prefect` on a terminal prints a usage-data
notice. Both are off when engram's flows, tasks or deployments are imported, unless the environment
already says otherwise. Set before Prefect is imported, and inherited by the ephemeral server's process.
This module does not import Prefect (engram/ never does).

When a flow run from Python or the CLI ends, Prefect stops its temporary API server; now and then SQLAlchemy's
pool logs "Exception closing connection" with an asyncio CancelledError as the server's event loop is torn down
(PrefectHQ/prefect#16504: the run has finished and nothing is lost). That one record is dropped; every other
record of those loggers is kept.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import MutableMapping

ANALYTICS = "PREFECT_SERVER_ANALYTICS_ENABLED"   # the server's telemetry service (the heartbeat)
DO_NOT_TRACK = "DO_NOT_TRACK"                    # the SDK's analytics and its first-run notice
FALSE_WORDS = ("0", "false", "no", "off", "")
# the loggers SQLAlchemy's connection pools log a failed close on (the pool class's own logger)
POOL_LOGGERS = ("sqlalchemy.pool.impl.NullPool", "sqlalchemy.pool.impl.AsyncAdaptedQueuePool",
                "sqlalchemy.pool.impl.QueuePool", "sqlalchemy.pool.impl.StaticPool")


class CancelledCloseFilter(logging.Filter):
    """Drops a pool's "Exception closing connection" record whose exception is a CancelledError (the
    temporary server's event loop going away at shutdown)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, asyncio.CancelledError) and "closing connection" in record.getMessage())


_FILTER = CancelledCloseFilter()


def quiet_prefect(environ: MutableMapping[str, str] | None = None) -> None:
    """Default Prefect's telemetry to off; an explicitly set variable is left as it is.

    A user who turned server analytics on keeps the SDK's analytics as Prefect ships them too.
    """
    for name in POOL_LOGGERS:
        if _FILTER not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_FILTER)
    env = os.environ if environ is None else environ
    if env.get(ANALYTICS, "false").strip().lower() not in FALSE_WORDS:
        return
    env.setdefault(ANALYTICS, "false")
    env.setdefault(DO_NOT_TRACK, "1")
