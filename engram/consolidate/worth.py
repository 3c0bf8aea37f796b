"""Whether a statement the night drew from a turn is worth remembering: a small fitted model, not a list.

The offline extraction (engram.text.atomic) keeps about nine in ten of the statements a careful reader
would keep, and as many that are not worth it: requests to the assistant, remarks about the talk,
passing steps. This model, a logistic regression on the statement's vector (the one the night stores
with the fact) and a few surface features, is fitted on statements of the dev chats labelled by
bench/fit/distil/GUIDELINE.md; `python -m bench.fit.distil.fit_distil_model` writes its coefficients
(engram/resources/distil_keep.json) and reports it on the chats it was not fitted on
(bench/fit/distil/DISTIL_MODEL.md). It reads vectors of the model it was fitted with only: with another
embedder every statement is kept, as before. The night applies it when ENGRAM_FACT_FILTER is on (off by
default: what it costs the answer at a token budget is in bench/fit/distil/IN_THE_NIGHT.md).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from engram.text.sentences import self_containedness

MODEL_PATH = Path(__file__).resolve().parent.parent / "resources" / "distil_keep.json"
LONG_TURN_CHARS = 500

_REQUEST = re.compile(r"\b(can|could|would) you\b|\bplease\b|\bhelp me\b|\bi need you\b|\blet me know\b", re.I)
_FIRST = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|me|we|our|us)\b", re.I)
_SECOND = re.compile(r"\b(you|your|you're)\b", re.I)
_LEADING_PRONOUN = re.compile(r"^\s*(it|this|that|these|those|they|there|he|she)\b", re.I)


def surface_features(statement: str, to_an_assistant: bool, turn_chars: int) -> list[float]:
    """What a sentence vector carries poorly: length, person, a question or request, digits, names, who
    was spoken to, how long the turn was, how well the statement stands alone."""
    tokens = statement.split()
    return [float(np.log1p(len(tokens))), float(statement.rstrip().endswith("?")), float(bool(_REQUEST.search(statement))),
            float(bool(_FIRST.search(statement))), float(bool(_SECOND.search(statement))),
            float(bool(_LEADING_PRONOUN.match(statement))), float(any(c.isdigit() for c in statement)),
            float(any(w[:1].isupper() for w in tokens[1:])), float(to_an_assistant),
            float(turn_chars > LONG_TURN_CHARS), float(self_containedness(statement))]


@cache
def _model() -> dict[str, Any] | None:
    if not MODEL_PATH.is_file():
        return None
    raw = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    scale = np.asarray(raw["scale"], np.float64)
    scale[scale == 0] = 1.0  # a feature that never varied in the labels carries no weight
    return {**raw, "mean": np.asarray(raw["mean"], np.float64), "scale": scale,
            "coef": np.asarray(raw["coef"], np.float64)}


def applies_to(embed_model: str, dim: int) -> bool:
    """Whether the fitted model reads vectors of this embedder."""
    model = _model()
    return model is not None and model["embed_model"] == embed_model and model["embed_dim"] == dim


def keep_probability(vectors: np.ndarray, features: list[list[float]]) -> np.ndarray:
    """P(worth remembering) per statement, from its vector and surface_features."""
    model = _model()
    if model is None:
        raise FileNotFoundError(f"{MODEL_PATH}: the distil model is not fitted (bench/fit/distil)")
    x = np.hstack([np.asarray(vectors, np.float64).reshape(len(features), -1), np.asarray(features, np.float64)])
    z = ((x - model["mean"]) / model["scale"]) @ model["coef"] + model["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


def worth_keeping(vectors: np.ndarray, features: list[list[float]]) -> np.ndarray:
    """True where a statement clears the fitted threshold."""
    return keep_probability(vectors, features) >= _model()["threshold"]  # type: ignore[index]
