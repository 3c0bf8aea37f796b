"""A fact hit's source episodes from the store: the ones it was extracted from, candidates of the search or not."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from engram.query.candidates import Filters
from engram.store import db

# the newest this many sources of a fact are listed (a merged fact may rest on hundreds); a digest's eight
# turns and the replies it quotes all fit
SOURCES_PER_FACT = 16


def add_stored_sources(con: db.Connection | None, hits: Sequence[Any], f: Filters) -> None:
    """Complete each fact hit's `sources` (id, created_at, text) with its stored source episodes that the
    filters' privacy and time allow, in one query; the ones already folded under it are kept.

    Without a connection (another process holds the store) the folded candidates are all there is.
    """
    facts = [h for h in hits if h.table == "facts"]
    if con is None or not facts:
        return
    stored: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for fact_id, episode_id, created_at, content in db.rows(
            con, "queries/query/fact_source_episodes", user_id=f.user_id, fact_ids=[h.id for h in facts],
            include_private=f.include_private, as_of=f.as_of, per_fact=SOURCES_PER_FACT):
        stored[fact_id].append({"id": episode_id, "created_at": created_at, "text": content})
    updated = ([r[0] for r in db.rows(con, "queries/query/facts_with_earlier_versions", user_id=f.user_id,
                                      fact_ids=[h.id for h in facts])] if f.as_of is None else [])
    if updated:
        # a current fact shows where its earlier values were said (the history an update replaced), so the
        # old statement is found under the new one rather than before it
        for fact_id, episode_id, created_at, content in db.rows(
                con, "queries/query/replaced_fact_source_episodes", user_id=f.user_id,
                fact_ids=updated, include_private=f.include_private, per_fact=SOURCES_PER_FACT):
            stored[fact_id].append({"id": episode_id, "created_at": created_at, "text": content, "replaced": True})
    for h in facts:
        # an episode the fact itself rests on is its source, whatever version it also stated; one that only
        # an earlier version rests on keeps its "replaced" mark, folded under the fact or not
        by_id: dict[str, dict[str, Any]] = {}
        for src in sorted(stored.get(h.id, ()), key=lambda x: not x.get("replaced")):
            by_id[src["id"]] = src
        for src in h.sources:
            by_id[src["id"]] = by_id[src["id"]] | src if src["id"] in by_id else src
        h.sources = sorted(by_id.values(), key=lambda s: (s["created_at"] is None, s["created_at"] or 0, s["id"]))
