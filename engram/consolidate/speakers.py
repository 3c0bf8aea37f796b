"""Whose words become facts: what the people the memory is about said or did.

A human turn (origin human, a role naming a person or "user") makes facts. An agent's own turns and
thoughts (role assistant, model, tool, system; origin model or tool) stay episodes: searchable, and able
to support or contradict a fact, but offline they create none. An event (kind event: something that
happened, whoever logged it, e.g. a tool's note that a meeting moved) is no one's words: it makes facts
unless its role is skipped. Both lists are settings (ENGRAM_FACT_ORIGINS, ENGRAM_FACT_SKIP_ROLES).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import numpy as np
import polars as pl

from engram.settings import Settings


class Cited(Protocol):
    """A drafted fact citing its episodes."""

    episode_ids: tuple[str, ...]


T = TypeVar("T", bound=Cited)


def names(text: str) -> frozenset[str]:
    """'assistant, Model' -> {'assistant', 'model'}: a comma-separated setting as lowercase names."""
    return frozenset(p.strip().lower() for p in text.split(",") if p.strip())


def makes_facts(role: str | None, origin: str | None, settings: Settings, kind: str | None = "turn") -> bool:
    """Whether an episode of this role, origin and kind may create facts."""
    if kind != "event" and (origin or "human").strip().lower() not in names(settings.fact_origins):
        return False
    return (role or "").strip().lower() not in names(settings.fact_skip_roles)


def voiced(eps: pl.DataFrame, settings: Settings) -> np.ndarray:
    """Per episode row: whether it may become facts (`eps` has role, origin and kind columns)."""
    origins = eps["origin"].to_list() if "origin" in eps.columns else [None] * eps.height
    kinds = eps["kind"].to_list() if "kind" in eps.columns else ["turn"] * eps.height
    return np.array([makes_facts(r, o, settings, k)
                     for r, o, k in zip(eps["role"].to_list(), origins, kinds, strict=True)], dtype=bool)


def split_voiced(facts: list[T], voiced_ids: set[str]) -> tuple[list[T], int]:
    """The LLM's facts that cite at least one episode whose words may become facts, and how many cited
    only an agent's turns (dropped: the assistant saying it is not the user stating it)."""
    kept = [f for f in facts if voiced_ids.intersection(f.episode_ids)]
    return kept, len(facts) - len(kept)
