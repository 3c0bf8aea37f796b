"""The night's learned "worth remembering" filter (engram.consolidate.worth), fitted by
bench/fit/distil/fit_distil_model.py: it reads the packaged MiniLM's vectors, and only those."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import polars as pl
import pytest

from engram import embed as embedders
from engram.consolidate import worth
from engram.consolidate.extract import worth_keeping
from engram.embed.models import HashEmbedder
from engram.settings import load_settings


@pytest.fixture(scope="module")
def minilm():
    return embedders.from_settings(load_settings(embedder="minilm"))


def _episodes(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"content": texts, "role": ["user"] * len(texts)})


def _statements(texts: list[str]) -> list[tuple[str, np.ndarray, str, datetime | None]]:
    return [(t, np.array([i]), "statement of 1 episode(s)", None) for i, t in enumerate(texts)]


def test_the_shipped_model_names_the_embedder_it_reads() -> None:
    raw = json.loads(worth.MODEL_PATH.read_text())
    assert len(raw["coef"]) == len(raw["mean"]) == len(raw["scale"]) == raw["embed_dim"] + 11
    assert 0 < raw["threshold"] < 1


def test_thanks_is_left_out_and_facts_about_the_user_stay(minilm) -> None:
    texts = ["Thanks so much, that really helped the user a lot with the user's understanding!",
             "The user's sister Anna is a nurse in Lisbon.",
             "The user is planning a workshop with Carla on February 20.",
             "The user likes spicy food."]
    kept, vectors, dropped = worth_keeping(_episodes(texts), _statements(texts), minilm)
    assert [k[0] for k in kept] == texts[1:] and dropped == 1
    assert all(v is not None and v.shape == (minilm.dim,) for v in vectors)
    np.testing.assert_allclose(vectors[0], np.asarray(minilm.embed([texts[1]]), np.float32)[0], atol=1e-5)


def test_another_embedder_keeps_every_statement_as_before() -> None:
    hashed = HashEmbedder(384)
    texts = ["Thanks so much, that really helped!", "The user likes spicy food."]
    assert not worth.applies_to(hashed.model, hashed.dim)
    kept, vectors, dropped = worth_keeping(_episodes(texts), _statements(texts), hashed)
    assert [k[0] for k in kept] == texts and vectors == [None, None] and dropped == 0


def test_surface_features_are_the_eleven_the_model_was_fitted_on() -> None:
    f = worth.surface_features("Can you please help me with my Flask 2.3 app?", True, 800)
    assert len(f) == 11
    assert f[1:4] == [1.0, 1.0, 1.0] and f[6] == 1.0 and f[8] == 1.0 and f[9] == 1.0


@pytest.mark.parametrize("on", [False, True])
def test_the_night_applies_the_filter_only_when_asked(tmp_path, monkeypatch, on: bool) -> None:
    from engram.consolidate.runner import consolidate_tenants
    from engram.store import db
    from engram.store.ingest import add_episodes

    for name in ("ENGRAM_FACT_FILTER", "ENGRAM_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(db_path=tmp_path / "e.duckdb", archive_dir=tmp_path / "archive", embedder="minilm",
                             llm="none", fact_filter=on)
    turns = ["Thanks so much, that really helped me a lot with my understanding!",
             "My sister Anna is a nurse in Lisbon."]
    add_episodes([{"user_id": "u", "role": "user", "content": t, "created_at": f"2026-01-0{i + 1}T10:00:00Z"}
                  for i, t in enumerate(turns)], settings)
    result = consolidate_tenants(settings, "run-1", datetime(2026, 2, 1), ["embed", "extract"], tenants=["u"])
    with db.open_store(settings, read_only=True) as con:
        texts = [r[0] for r in con.execute("select text from facts where user_id = 'u' order by text").fetchall()]
    assert "The user's sister Anna is a nurse in Lisbon." in texts
    assert any(t.startswith("Thanks") for t in texts) is (not on)
    assert result["u"]["extract"]["statements_not_worth_keeping"] == (1 if on else 0)
