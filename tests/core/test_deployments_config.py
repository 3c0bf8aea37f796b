"""prefect.yaml stays in step with the code: entrypoints import, the nightly schedule is the default cron."""

from __future__ import annotations

import importlib
from pathlib import Path

import yaml

from engram.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_prefect_yaml_entrypoints_exist_and_schedule_matches_settings() -> None:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    names = {d["name"] for d in config["deployments"]}
    assert {"nightly", "manual"} <= names
    for deployment in config["deployments"]:
        path, attr = deployment["entrypoint"].split(":")
        module = importlib.import_module(path)  # a module path: resolves from a wheel and from the repo
        assert callable(getattr(module, attr))
    nightly = next(d for d in config["deployments"] if d["name"] == "nightly")
    assert nightly["schedules"][0]["cron"] == Settings.model_fields["nightly_cron"].default
    assert nightly["concurrency_limit"] == 1


def test_embedding_worker_runs_one_at_a_time_back_to_back() -> None:
    """A new run is scheduled as often as a run lasts (duration_s), one at a time, in prefect.yaml and serve."""
    import inspect

    from engram.deployments.serve import EMBED_RUN_S, build_deployments
    from engram.flows.embedding import embedding_worker

    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    worker = next(d for d in config["deployments"] if d["name"] == "embedding-worker")
    assert worker["entrypoint"] == "engram.flows.embedding:embedding_worker"
    assert worker["concurrency_limit"] == 1
    assert worker["schedules"][0]["interval"] == worker["parameters"]["duration_s"] == EMBED_RUN_S
    assert inspect.signature(embedding_worker.fn).parameters["duration_s"].default == EMBED_RUN_S
    served = next(d for d in build_deployments() if d.flow_name == "embedding-worker")
    assert served.concurrency_limit == 1 and served.parameters == {"duration_s": EMBED_RUN_S}
    assert served.schedules[0].schedule.interval.total_seconds() == EMBED_RUN_S
