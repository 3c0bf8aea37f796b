"""Dimension safety, statically: every named query that reads vectors filters on model and dim."""

from __future__ import annotations

import re

import pytest

from engram.store import db

# Queries that return vectors without filtering, and why that is safe. Keep this list short.
ALLOWED = {
    "consolidate/run_episode_vectors": "episodes consumed by one extract run, chosen by consolidation_episodes, "
                           "which filters on the active model and dim",
}
READS_VECTOR = re.compile(r"^\s*(select\s+)?(\w+\.)?embedding\s*,?\s*$|then\s+\w+\.embedding\b", re.M | re.I)


def _vector_queries() -> list[str]:
    names = []
    for path in sorted((db.SQL_DIR / "queries").glob("*/*.sql")):
        body = "\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("--"))
        first = body.lstrip().split(None, 1)[0].lower() if body.strip() else ""
        if first in {"insert", "update", "delete", "create"}:
            continue
        if READS_VECTOR.search(body):
            names.append(f"{path.parent.name}/{path.stem}")
    return names


def test_the_scan_finds_the_known_vector_queries() -> None:
    found = set(_vector_queries())
    assert {"consolidate/tenant_fact_vectors", "consolidate/consolidation_episodes"} <= found


@pytest.mark.parametrize("name", _vector_queries())
def test_vector_queries_filter_on_embedding_model_and_dim(name: str) -> None:
    if name in ALLOWED:
        pytest.skip(ALLOWED[name])
    text = db.sql(f"queries/{name}")
    assert re.search(r"embedding_model\s*=\s*\$model", text), f"{name}.sql reads vectors without $model"
    assert re.search(r"embedding_dim\s*=\s*\$dim", text), f"{name}.sql reads vectors without $dim"
