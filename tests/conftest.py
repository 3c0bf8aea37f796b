"""Shared fixtures: an isolated settings object and store per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engram.settings import Settings, load_settings
from engram.store import db

# Tests run on every core (xdist) and start Prefect's ephemeral server in CLI subprocesses: give it
# longer than the 20 s default on a loaded machine (inherited by every subprocess).
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings on a fresh store in tmp_path, hash embedder, no LLM; a developer's .env never leaks."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ENGRAM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ENGRAM_DB_PATH", str(tmp_path / "engram.duckdb"))
    monkeypatch.setenv("ENGRAM_ARCHIVE_DIR", str(tmp_path / "archive"))
    monkeypatch.setenv("ENGRAM_EMBEDDER", "hash")
    monkeypatch.setenv("ENGRAM_LLM", "none")
    return load_settings()


@pytest.fixture
def con(settings: Settings):
    """A migrated connection to the test store."""
    with db.open_store(settings) as connection:
        yield connection


@pytest.fixture
def fresh_index_caches():
    """Empty index caches before and after the test: a tenant's cached index from another test (same store
    path, same user id) would be searched instead of the rows this test seeded."""
    from engram.index.cache import PERSISTED
    from engram.index.vector_index import CACHE

    CACHE.clear()
    PERSISTED.clear()
    yield
    CACHE.clear()
    PERSISTED.clear()


# Whole folders are slow by what they do: e2e runs the CLI in subprocesses, flows start Prefect's test
# harness, reliability kills and fuzzes processes. `pytest -m "not slow"` is the inner loop's fast tier.
SLOW_FOLDERS = ("e2e", "flows", "reliability")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of a slow folder `slow`."""
    root = Path(__file__).parent
    for item in items:
        parts = Path(item.fspath).relative_to(root).parts
        if parts and parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)
