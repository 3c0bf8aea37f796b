"""engram.tasks: imported before any Prefect module of the package, so Prefect's telemetry defaults to off."""

from engram.tasks.prefect_server import stop_with_parent
from engram.prefect_env import quiet_prefect

quiet_prefect()
stop_with_parent()
