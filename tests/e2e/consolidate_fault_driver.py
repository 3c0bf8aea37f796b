"""`engram consolidate` in its own process with one fault (for the CLI's fault tests).

FAULT_DELETE_AT=start|<stage>: remove the store (and its WAL) before the flow runs, or as that stage
begins. FAULT_RAISE_AT=<stage>: that stage raises PermissionError (an unwritable archive dir).
Arguments are the CLI's: `python -m tests.e2e.consolidate_fault_driver consolidate ...`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import engram.cli.consolidate as cli_consolidate
from engram.cli.app import app
from engram.consolidate import runner


def _remove_store() -> None:
    store = Path(os.environ["ENGRAM_DB_PATH"])
    for path in store.parent.glob(store.name + "*"):
        path.unlink()


def _install() -> None:
    delete_at, raise_at = os.environ.get("FAULT_DELETE_AT"), os.environ.get("FAULT_RAISE_AT")
    if delete_at == "start":
        real_run = cli_consolidate.run_nightly

        def run_after_removal(*args: Any, **kwargs: Any) -> Any:
            _remove_store()
            return real_run(*args, **kwargs)

        cli_consolidate.run_nightly = run_after_removal
    elif delete_at:
        real_stage = runner.REGISTRY[delete_at]
        runner.REGISTRY[delete_at] = lambda ctx, tools: (_remove_store(), real_stage(ctx, tools))[1]
    if raise_at:
        def unwritable(ctx: Any, tools: Any) -> Any:
            raise PermissionError(13, "Permission denied", "/archive/user_id=x")

        runner.REGISTRY[raise_at] = unwritable


if __name__ == "__main__":
    _install()
    sys.argv = ["engram", *sys.argv[1:]]
    app()
