"""Shared vocabulary and checks of the Thought DB: types, ids, times, source_refs validation."""

from __future__ import annotations

from collections.abc import Sequence

from engram.errors import InvalidInput
from engram.store import db
from engram.text.normalize import stable_id

CLAIM_TYPES = ("fact", "preference", "assumption", "goal", "instruction")
NODE_TYPES = ("Decision", "Action", "Summary")
EDGE_TYPES = ("depends_on", "supports", "contradicts", "derived_from", "mentions", "supersedes", "same_as")
VISIBILITIES = ("private", "project", "global")
SCOPES = ("project", "global")
WHY_EDGE_TYPES = ("depends_on", "supports", "derived_from")


def new_id(prefix: str, user_id: str, *parts: str) -> str:
    """A deterministic id for a Thought-DB record."""
    return stable_id(prefix, user_id, *parts)


def require(value: str | None, field: str) -> str:
    """A non-blank string, or InvalidInput naming the field."""
    if value is None or not str(value).strip():
        raise InvalidInput(f"{field}: required")
    return str(value).strip()


def choice(value: str, allowed: Sequence[str], field: str) -> str:
    """Value if it is one of allowed, else InvalidInput naming the field and the options."""
    if value not in allowed:
        raise InvalidInput(f"{field}: {value!r} is not one of {', '.join(allowed)}")
    return value


def check_source_refs(
    con: db.Connection, user_id: str, refs: Sequence[str] | None, field: str = "source_refs", required: bool = True
) -> list[str]:
    """Deduplicated refs, each an episode id of the tenant; InvalidInput naming the field otherwise."""
    clean = sorted({r.strip() for r in (refs or []) if r and r.strip()})
    if required and not clean:
        raise InvalidInput(f"{field}: at least one episode id is required")
    if clean:
        unknown = [r for (r,) in db.rows(con, "queries/thoughtdb/thought_unknown_episodes", user_id=user_id, ids=clean)]
        if unknown:
            raise InvalidInput(f"{field}: unknown episode id(s) for tenant {user_id}: {unknown[:10]}")
    return clean


def items(con: db.Connection, user_id: str, ids: Sequence[str], include_private: bool = True) -> dict[str, dict]:
    """What each id is (claim | node | event) with label, status and validity; unknown ids are absent."""
    if not ids:
        return {}
    frame = db.query(con, "queries/thoughtdb/thought_items", user_id=user_id, ids=list(ids), include_private=include_private)
    out: dict[str, dict] = {}
    for row in frame.iter_rows(named=True):
        out.setdefault(row["id"], row)  # ids are unique per table; a clash resolves claim < event < node
    return out
