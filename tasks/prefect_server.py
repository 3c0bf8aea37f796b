"""Prefect's temporary API server stops when the process that started it dies, however it dies.

A flow run without PREFECT_API_URL makes Prefect start a temporary server as a child process and stop it
at exit (atexit). A SIGKILL of `engram consolidate` skips atexit: the server lived on, re-parented to PID
1, holding its port and SQLite file. Here the server is started through a small module
(engram.tasks.prefect_server_child), which runs the same uvicorn command and ends
itself once PARENT_PID is no longer its parent. Prefect is imported only inside the functions that need it.

Prefect builds the command in `SubprocessASGIServer._run_uvicorn_command` (prefect 3.8, pinned below 3.9
in pyproject.toml); that one method is replaced when its module is first imported, so a run against a
real server pays nothing for it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import subprocess
import sys
from types import ModuleType
from typing import Any

SERVER_MODULE = "prefect.server.api.server"
CHILD_MODULE = "engram.tasks.prefect_server_child"


def _run_uvicorn_command(self: Any) -> subprocess.Popen[Any]:
    """Prefect's command and environment, run under the watching child module."""
    import prefect
    from prefect.settings import get_current_settings

    server_env = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    return subprocess.Popen(
        args=[sys.executable, "-m", CHILD_MODULE, str(os.getpid()),
              "--app-dir", str(prefect.__module_path__.parent), "--factory", "prefect.server.api.server:create_app",
              "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
        env={**os.environ, **server_env, **get_current_settings().to_environment_variables(exclude_unset=True)},
    )


def _patch(module: ModuleType) -> None:
    server = getattr(module, "SubprocessASGIServer", None)
    if server is not None and hasattr(server, "_run_uvicorn_command"):
        server._run_uvicorn_command = _run_uvicorn_command


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of SERVER_MODULE so the patch follows its import."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != SERVER_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            _patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def stop_with_parent() -> None:
    """Make Prefect's temporary server end with the process that starts it (idempotent)."""
    if SERVER_MODULE in sys.modules:
        _patch(sys.modules[SERVER_MODULE])
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
