"""Text normalisation and content hashing shared by ingestion, dedupe and retrieval."""

from __future__ import annotations

import re
import unicodedata

from blake3 import blake3

_WS = re.compile(r"\s+")
_CC = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode category Cc, exactly


def normalize(text: str) -> str:
    """NFKC, lowercase, control characters removed, whitespace collapsed."""
    text = _CC.sub(" ", unicodedata.normalize("NFKC", text).lower())
    # isprintable() is False for every other category-C character (and for separators, which the
    # slow path keeps): only such rare texts pay for the per-character scan. Same result either way.
    if not text.isprintable():
        text = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in text)
    return _WS.sub(" ", text).strip()


def content_hash(text: str) -> str:
    """blake3 hex digest of the normalised text."""
    return blake3(normalize(text).encode("utf-8")).hexdigest()


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id from parts, so retried work produces the same ids."""
    digest = blake3("\x1f".join(parts).encode("utf-8")).hexdigest()[:20]
    return f"{prefix}_{digest}"
