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
