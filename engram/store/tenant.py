"""One spelling per tenant: user_id is NFKC-normalised and trimmed; control characters are refused."""

from __future__ import annotations

import unicodedata
from typing import Any

from engram.errors import InvalidInput

MAX_USER_ID_CHARS = 512


def user_id_problem(value: Any) -> str | None:
    """Why value cannot be a user_id (None when it can, after normalise_user_id)."""
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    if any(unicodedata.category(ch) in {"Cc", "Cs"} for ch in value):
        return "contains a control character (or a lone surrogate)"
    text = unicodedata.normalize("NFKC", value).strip()
    if not text:
        return "required and must not be empty"
    if len(text) > MAX_USER_ID_CHARS:
        return f"longer than {MAX_USER_ID_CHARS} characters"
    return None


def normalise_user_id(value: Any, field: str = "user_id") -> str:
    """The canonical user_id: NFKC (full-width 'ａｌｉｃｅ' is 'alice'), trimmed; else InvalidInput naming the field.

    NFKC rather than NFC: compatibility forms (full-width letters, ligatures) look the same to a
    person, so they must not open a second tenant.
    """
    problem = user_id_problem(value)
    if problem:
        raise InvalidInput(f"{field}: {problem}")
    return unicodedata.normalize("NFKC", value).strip()


def normalise_user_option(value: str | None) -> str | None:
    """typer callback for --user: the normalised tenant, or a usage error naming user_id."""
    if value is None:
        return None
    import typer

    problem = user_id_problem(value)
    if problem:
        raise typer.BadParameter(f"user_id: {problem}")
    return normalise_user_id(value)
