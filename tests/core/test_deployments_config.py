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


def _yaml_deployments() -> dict[str, dict]:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    out = {}
    for d in config["deployments"]:
        path, attr = d["entrypoint"].split(":")
        flow = getattr(importlib.import_module(path), attr)
        out[d["name"]] = {"flow": flow.name, "tags": sorted(d.get("tags", [])),
                          "concurrency_limit": d.get("concurrency_limit"), "parameters": d.get("parameters") or {},
                          "description": d.get("description") or flow.description,
                          "scheduled": bool(d.get("schedules"))}
    return out


def test_prefect_yaml_and_serve_define_the_same_deployments() -> None:
    """Issue 45, item 14: the work-pool file and `serve` offer the same deployments, described alike."""
    from engram.deployments.serve import build_deployments

    def limit(value):  # an int, or Prefect's ConcurrencyLimitConfig
        return getattr(value, "limit", value)

    served = {d.name: {"flow": d.flow_name, "tags": sorted(d.tags), "concurrency_limit": limit(d.concurrency_limit),
                       "parameters": d.parameters or {}, "description": d.description,
                       "scheduled": bool(d.schedules)} for d in build_deployments()}
    assert _yaml_deployments() == served


def test_serve_says_which_store_it_uses(settings) -> None:
    from engram.deployments.serve import store_line

    line = store_line(settings)
    assert line.startswith("store: ") and str(settings.db_path) in line
    assert "archive: " in line and str(settings.archive_dir) in line
    relative = settings.model_copy(update={"db_path": Path("data/engram.duckdb")})
    assert str(Path.cwd() / "data" / "engram.duckdb") in store_line(relative)  # resolved where serve runs
