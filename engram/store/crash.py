"""Test hook for crash-safety tests: SIGKILL the process at a named point, else do nothing."""

from __future__ import annotations

import os
import signal

CRASH_ENV = "ENGRAM_TEST_CRASH_AT"


def crash_point(step: str) -> None:
    """Kill this process (no cleanup, like kill -9) when ENGRAM_TEST_CRASH_AT names `step`."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
