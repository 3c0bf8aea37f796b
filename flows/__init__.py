"""engram.flows: imported before any Prefect module of the package, so Prefect's telemetry defaults to off
and its temporary server ends with the process that started it."""

from engram.tasks.prefect_server import stop_with_parent
from engram.prefect_env import quiet_prefect

quiet_prefect()
stop_with_parent()
