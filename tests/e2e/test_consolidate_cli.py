"""The pipeline commands as a user types them: demo, explain, consolidate, revert-run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def engram(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("engram") or ""
    cmd = [exe, *args] if exe else [sys.executable, "-m", "engram.cli.app", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(ROOT))
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    """A working directory where `engram demo` ran once (default store data/engram.duckdb, MiniLM)."""
    cwd = tmp_path_factory.mktemp("demo")
    proc = engram("demo", "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (cwd / "demo.json").write_text(proc.stdout)
    (cwd / "demo.stderr").write_text(proc.stderr)
    return cwd


def test_demo_prints_a_report_facts_and_searches(demo_dir: Path) -> None:
    report = json.loads((demo_dir / "demo.json").read_text())
    assert (demo_dir / "data" / "engram.duckdb").is_file()
    stages = report["run"]["tenants"]["demo"]
    assert stages["extract"]["facts_created"] >= 5
    assert len(report["facts"]) >= 5
    assert len(report["searches"]) == 4 and all(report["searches"].values())
    # the private episode never shows up in a search
    texts = [h["text"] for hits in report["searches"].values() for h in hits]
    assert not any("password" in t for t in texts)
    # the current memory comes first, and a search shows each memory once (a fact folds its episodes)
    drink = report["searches"]["what does the user drink in the morning?"]
    assert "green tea" in drink[0]["text"].lower()
    # issue 45: the stale drink is not current; a contested pair is shown as such; the order is the
    # relevance printed; the review queue is named
    assert not any("coffee black" in h["text"].lower() and h["status"] == "active" for h in drink)
    spicy = report["searches"]["does the user like spicy food?"]
    assert [h["contested"] for h in spicy[:2]] == [True, True] and "contested" in spicy[0]["line"]
    for hits in report["searches"].values():
        assert [h["relevance"] for h in hits] == sorted((h["relevance"] for h in hits), reverse=True)
    assert report["waiting_reviews"] and any("engram review list --user demo" in line for line in report["lines"])
    for hits in report["searches"].values():
        assert len({h["text"] for h in hits}) == len(hits)
    # Prefect's INFO lines stay out of the terminal (issue 21): they are in engram's log file
    stderr = (demo_dir / "demo.stderr").read_text()
    assert "Finished in state" not in stderr and "Beginning flow run" not in stderr, stderr[-2000:]
    assert "prefect.flow_runs: Beginning flow run" in (demo_dir / "data" / "engram.log").read_text()
    # and the run published the read snapshot
    assert report["run"]["snapshot"]["rows"]["facts"] >= 5


def test_explain_shows_history_and_sources(demo_dir: Path) -> None:
    fact_id = json.loads((demo_dir / "demo.json").read_text())["facts"][0]["id"]
    proc = engram("explain", fact_id, "--user", "demo", "--json", cwd=demo_dir)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["fact"]["id"] == fact_id
    assert info["events"][0]["action"] == "created"
    assert {s["relation"] for s in info["sources"]} >= {"extracted_from"}
    unknown = engram("explain", "nope", "--user", "demo", cwd=demo_dir)
    assert unknown.returncode == 2 and "fact_id: unknown fact" in unknown.stderr


def test_second_consolidation_changes_nothing_and_revert_undoes_a_run(demo_dir: Path) -> None:
    proc = engram("consolidate", "--user", "demo", "--json", cwd=demo_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["tenants"]["demo"]["extract"]["facts_created"] == 0
    assert result["tenants"]["demo"]["publish"]["changes"] == []
    demo_run = json.loads((demo_dir / "demo.json").read_text())["run"]["run_id"]
    reverted = engram("revert-run", demo_run, "--user", "demo", cwd=demo_dir)
    assert reverted.returncode == 0 and "reverted" in reverted.stdout
    stats = json.loads(engram("stats", "--json", cwd=demo_dir).stdout)
    active = [r for r in stats if r["table"] == "facts" and r["status"] == "active"]
    assert active == []  # every fact the demo run created is retracted
