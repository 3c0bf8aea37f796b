"""Shared pieces of the query module: validation, the embedder call, time and recency."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from engram import embed as embedders
from engram.errors import EmbedderUnavailable, EngramError, InvalidInput
from engram.settings import Settings

RECENCY_HALF_LIFE_DAYS = 30.0


def require_text(value: Any, field: str, max_chars: int = 20_000) -> str:
    """A non-empty string, else invalid_params naming the field."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: must be a non-empty string")
    if len(value) > max_chars:
        raise InvalidInput(f"{field}: longer than {max_chars} characters")
    return value


def require_int(value: Any, field: str, lo: int, hi: int) -> int:
    """An int in [lo, hi], else invalid_params naming the field."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidInput(f"{field}: must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def require_unit(value: Any, field: str) -> float:
    """A finite number in [0, 1], else invalid_params naming the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInput(f"{field}: must be a number in [0, 1], got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{field}: must be in [0, 1], got {value!r}")
    return float(value)


def require_tags(value: Any, field: str) -> list[str]:
    """A list of tag strings (None = empty)."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(t, str) for t in value):
        raise InvalidInput(f"{field}: must be a list of strings")
    return [t.strip() for t in value if t.strip()]


def embedder_of(settings: Settings, embedder: Any = None) -> Any:
    """The given embedder, else the configured one; any failure is embedder_unavailable."""
    try:
        return embedder or embedders.from_settings(settings)
    except EngramError:
        raise
    except Exception as exc:  # a model or network failure means "not available now"
        raise EmbedderUnavailable(f"query embedding failed: {type(exc).__name__}") from exc


def embed_query(settings: Settings, texts: list[str], embedder: Any = None) -> tuple[np.ndarray, Any]:
    """Embed query texts with the active embedder; any failure is embedder_unavailable."""
    embedder = embedder_of(settings, embedder)
    try:
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    except EngramError:
        raise
    except Exception as exc:  # a model or network failure means "not available now"
        raise EmbedderUnavailable(f"query embedding failed: {type(exc).__name__}") from exc
    if vectors.shape != (len(texts), embedder.dim) or not np.isfinite(vectors).all():
        raise EmbedderUnavailable(f"embedder returned shape {vectors.shape}, expected ({len(texts)}, {embedder.dim})")
    return vectors, embedder


def recency(created_at: datetime | None, now: datetime) -> float:
    """1.0 for now, halving every RECENCY_HALF_LIFE_DAYS; future rows count as now."""
    if created_at is None:
        return 0.0
    days = max((now - created_at).total_seconds(), 0.0) / 86400.0
    return 0.5 ** (days / RECENCY_HALF_LIFE_DAYS)
