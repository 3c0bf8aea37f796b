"""`python -m engram.tasks.prefect_server_child PARENT_PID UVICORN_ARGS...`: Prefect's temporary server
(uvicorn), ending itself when PARENT_PID is no longer its parent (engram.tasks.prefect_server). Nothing in
the package imports this module: it runs as __main__ only."""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

POLL_S = 1.0
GRACE_S = 10.0  # uvicorn's own shutdown on SIGTERM, then a hard exit


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_S)
    os._exit(1)


def main(argv: list[str]) -> None:
    """Run uvicorn with argv[1:], watched for the loss of parent argv[0]."""
    parent = int(argv[0])
    if os.getppid() != parent:  # the parent died before this process got going
        sys.exit(1)
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watch").start()
    sys.argv = ["uvicorn", *argv[1:]]
    runpy.run_module("uvicorn", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
