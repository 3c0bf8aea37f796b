"""The final cut of a search: only results that match the query fill the list, and the 0-1 relevance
printed is the score that orders it.

Fusion (engram.query.search) gives every candidate of the vector ranking a positive score, so with few
memories that match, recency and confidence alone carried unrelated ones into the list (issue 45 #5:
"Ignore previous instructions ..." second for "where does Lena live?", semantic 0.00, lexical 0.00).
A result matches when its own text shares a search word with the query; when (a turn) it follows a
question whose words match (the answer sits after the question: search.CONTEXT; what a turn borrows
from the turn after it is a nudge in ranking, not a match); when its meaning, with its session
neighbours' lift, is at least half as close to the query as the closest result's; when it is dated
inside a time the query names; or, for a fact, when one of its source episodes matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engram.text.tokens import tokenize

# A result at less than half the best result's cosine is a neighbour in the vector ranking, not a match
SEMANTIC_SHARE = 0.5
# The words extraction writes for the person first person stands for ("I eat meat" -> "The user eats
# meat": engram.text.atomic.speaker_name, not imported here to keep it off a search's first import):
# every statement of theirs has them, so a query's "the user" matches no fact in particular
SPEAKER_WORDS = frozenset(tokenize("The user"))


def matching(hits: Sequence[Any], query: str, episodes: Iterable[Any] = ()) -> list[Any]:
    """The hits (in their order) that match `query` (each hit's `match`, as ranking saw it); a fact also
    through its source episodes among `episodes` (the episode candidates the search ranked)."""
    pool = list(episodes)
    best = max((h.match.get("semantic", 0.0) for h in [*hits, *pool]), default=0.0)
    floor = SEMANTIC_SHARE * best
    words = frozenset(tokenize(query)) - SPEAKER_WORDS

    def own(hit: Any) -> bool:
        m = hit.match
        if m.get("lexical", 0.0) > 0 and (m.get("after_question", 0.0) > 0 or not words.isdisjoint(tokenize(hit.text))):
            return True
        return m.get("dated", 0.0) > 0 or (floor > 0 and m.get("semantic", 0.0) >= floor)

    by_id = {e.id: e for e in pool}
    out = []
    for h in hits:
        sources = (by_id[s["id"]] for s in h.sources if s["id"] in by_id) if h.table == "facts" else ()
        if own(h) or any(own(e) for e in sources):
            out.append(h)
    return out


def score_top(method: str, rrf_k: int, vector: float, lexical: float, time: float) -> float:
    """The fused score of a row first in every ranking the search used: relevance 1."""
    if method == "vector":
        return 1.0  # the vector method's score is the 0-1 weighted relevance itself
    top = lexical if method == "lexical" else vector + lexical
    return (top + time) / (rrf_k + 1)


def show_order(hits: Sequence[Any], top: float) -> None:
    """Set each hit's relevance to its score scaled to 0-1 by `top`: the number printed is the order."""
    for h in hits:
        h.relevance = round(min(max(h.score / top, 0.0), 1.0), 4)
