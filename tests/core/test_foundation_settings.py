"""Settings: defaults, clamping with a warning naming ENGRAM_<VAR>, invalid values rejected by name."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.settings import Settings, load_settings


def test_defaults_match_the_issue(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_DB_PATH")
    monkeypatch.delenv("ENGRAM_EMBEDDER")
    monkeypatch.delenv("ENGRAM_ARCHIVE_DIR")
    s = load_settings()
    assert s.db_path == Path("data/engram.duckdb")
    assert s.archive_dir == Path("data/archive")
    assert (s.top_k, s.sim_thresh, s.db_limit, s.retention_days) == (5, 0.5, 500, 30)
    assert (s.archive_format, s.auto_mark_removal) == ("parquet", False)
    assert (s.inner_voice_mix, s.retrieve_top_k, s.min_floor) == (0.6, 10, 0.15)
    assert (s.max_candidates_per_source, s.enable_inner_voice) == (150, False)
    assert (s.embedder, s.embed_dim) == ("minilm", 384)
    assert s.no_log is False


def test_every_field_has_a_description() -> None:
    missing = [name for name, f in Settings.model_fields.items() if not f.description]
    assert missing == []


@pytest.mark.parametrize(
    ("var", "raw", "field", "expected"),
    [
        ("ENGRAM_TOP_K", "0", "top_k", 1),
        ("ENGRAM_TOP_K", "99", "top_k", 50),
        ("ENGRAM_SIM_THRESH", "1.5", "sim_thresh", 1.0),
        ("ENGRAM_SIM_THRESH", "-0.2", "sim_thresh", 0.0),
        ("ENGRAM_RETENTION_DAYS", "-5", "retention_days", 0),
        ("ENGRAM_MIN_FLOOR", "inf", "min_floor", 1.0),
    ],
)
def test_out_of_range_is_clamped_with_a_warning_naming_the_variable(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    var: str, raw: str, field: str, expected: float,
) -> None:
    monkeypatch.setenv(var, raw)
    with caplog.at_level(logging.WARNING, logger="engram.settings"):
        s = load_settings()
    assert getattr(s, field) == expected
    assert type(getattr(s, field)) is type(expected)
    assert any(var in r.getMessage() and "out of range" in r.getMessage() for r in caplog.records)


def test_in_range_values_log_nothing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ENGRAM_TOP_K", "7")
    with caplog.at_level(logging.WARNING, logger="engram.settings"):
        assert load_settings().top_k == 7
    assert caplog.records == []


@pytest.mark.parametrize(
    ("var", "raw"),
    [
        ("ENGRAM_TOP_K", "abc"),
        ("ENGRAM_TOP_K", "3.5"),
        ("ENGRAM_SIM_THRESH", "nan"),
        ("ENGRAM_EMBEDDER", "word2vec"),
        ("ENGRAM_LLM", "gpt"),
        ("ENGRAM_ENABLE_INNER_VOICE", "maybe"),
        ("ENGRAM_ARCHIVE_FORMAT", "csv"),
    ],
)
def test_invalid_values_are_rejected_naming_the_variable(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, var: str, raw: str
) -> None:
    monkeypatch.setenv(var, raw)
    with pytest.raises(InvalidInput) as info:
        load_settings()
    assert var in str(info.value)
    assert repr(raw) in str(info.value)


def test_overrides_are_validated_too(settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="ENGRAM_TOP_K"):
        load_settings(top_k="many")
    assert load_settings(top_k=1000).top_k == 50


def test_masked_hides_the_secret_and_shows_plain_values(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_GEMINI_API_KEY", "sk-very-secret")
    values = load_settings().masked()
    assert values["gemini_api_key"] == "********"
    assert "sk-very-secret" not in repr(values)
    assert values["db_path"] == str(settings.db_path)
    assert set(values) == set(Settings.model_fields)


def test_settings_are_frozen_and_hashable(settings: Settings) -> None:
    with pytest.raises(Exception):
        settings.top_k = 3  # type: ignore[misc]
    assert hash(settings) == hash(load_settings())
