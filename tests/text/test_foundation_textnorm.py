"""Text normalisation and hashing: the fast path gives exactly the reference result."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.text.normalize import content_hash, normalize, stable_id


def reference_normalize(text: str) -> str:
    """The straightforward definition: NFKC, lower, every category-C char to a space, collapse."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(ch if not unicodedata.category(ch).startswith("C") else " " for ch in text)
    return re.sub(r"\s+", " ", text).strip()


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=60))
def test_normalize_matches_the_reference_on_any_text(text: str) -> None:
    assert normalize(text) == reference_normalize(text)


def test_normalize_examples() -> None:
    cases = {
        "  Hello\tWORLD\n": "hello world",
        "ﬁne Ｆｕｌｌ": "fine full",          # NFKC ligature and full-width letters
        "a\u200bb": "a b",                    # zero-width space (Cf) becomes a space
        "line\u2028sep": "line sep",          # line separator (Zl) is whitespace
        "nbsp\u00a0here": "nbsp here",
        "bell\x07ring\x85": "bell ring",
        "private\ue000use": "private use",    # Co
    }
    for raw, expected in cases.items():
        assert normalize(raw) == expected == reference_normalize(raw)


def test_content_hash_ignores_case_and_spacing_only() -> None:
    assert content_hash("I like  Tea\n") == content_hash("i like tea")
    assert content_hash("I like tea") != content_hash("I like tee")
    assert len(content_hash("x")) == 64


def test_stable_id_is_deterministic_and_separates_parts() -> None:
    assert stable_id("ep", "a", "b") == stable_id("ep", "a", "b")
    assert stable_id("ep", "ab", "c") != stable_id("ep", "a", "bc")
    assert stable_id("ep", "a").startswith("ep_") and len(stable_id("ep", "a")) == 23
