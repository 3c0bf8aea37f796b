"""One search result (Hit), how a ranked candidate row becomes one, and the rules that compare two
candidate rows (a restatement, an update, a dispute) for the diversity step of engram.query.ranking."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from engram.text.normalize import content_hash
from engram.text.sentences import DIGEST, valence_conflict
from engram.text.tokens import TEXT_CACHE_SIZE, kept_per_text, tokenize

# Two episodes at DIVERSITY_COSINE (engram.query.ranking) fold only when they also share this much of their
# words (Jaccard of their search tokens): a fact is one sentence, so 0.8 cosine is a restatement, but an
# episode's vector reads a whole message (up to 256 tokens) and two replies of one conversation on one
# topic reach 0.8-0.9 without restating each other (folded, they hid distinct turns on BEAM transcripts)
RESTATE_OVERLAP = 0.5


@dataclass
class Hit:
    """One search result."""

    id: str
    table: str
    text: str
    score: float
    similarity: float | None
    relevance: float
    confidence: float
    recency: float
    lexical_score: float
    created_at: datetime | None
    content_hash: str
    tags: list[str] = field(default_factory=list)
    status: str | None = None
    role: str | None = None
    session_id: str | None = None
    kind: str | None = None
    claim_type: str | None = None
    contested: bool = False  # a contradiction review names this fact (or its fact) and waits (query.contested)
    # a fact's source episodes, folded under it: id, time, text (engram.query.fact_sources)
    sources: list[dict[str, Any]] = field(default_factory=list)
    date: datetime | None = None  # when what it states holds: a fact's valid_from, an episode's time
    valid_to: datetime | None = None
    # how it scored on each signal, each 0-1: semantic (cosine), lexical (BM25 / best in the table), recency,
    # confidence (the relevance printed is the fused rank score: engram.query.matches.show_order)
    parts: dict[str, float] = field(default_factory=dict)
    # a long episode's passage that matched the query (engram.query.snippets.matching_passage): start and
    # end offsets into text, and its text; None for a short episode and for a fact
    passage: dict[str, Any] | None = None
    # candidates of the same table this hit stands for (near-duplicates the diversity step folded in)
    absorbed: list[str] = field(default_factory=list, repr=False)
    # how it matched the query as ranking saw it: cosine with its session neighbours' lift, lexical part with
    # theirs, 1 when dated inside a time the query names, 1 when it follows a question (engram.query.matches)
    match: dict[str, float] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = asdict(self)
        out.pop("absorbed")
        out.pop("match")
        out["created_at"] = self.created_at.isoformat() if self.created_at else None
        out["date"] = self.date.isoformat() if self.date else None
        out["valid_to"] = self.valid_to.isoformat() if self.valid_to else None
        for src in out["sources"]:
            src["created_at"] = src["created_at"].isoformat() if src.get("created_at") else None
        return out


def hit_of(table: str, row: dict[str, Any], j: int, score: float, sims: np.ndarray, has_vec: np.ndarray,
            qvec: np.ndarray | None, lex_scores: np.ndarray, lex_top: float, rec: np.ndarray,
            conf: np.ndarray) -> Hit:
    """The Hit of candidate j at `score` (its own, or the score of the slot it takes), with its parts."""
    row["content_hash"] = row.get("content_hash") or text_hash(row["text"])
    sim = float(sims[j]) if has_vec[j] and qvec is not None else None
    parts = {"semantic": min(max(sim or 0.0, 0.0), 1.0), "lexical": min(float(lex_scores[j]) / lex_top, 1.0),
             "recency": float(rec[j]), "confidence": float(conf[j])}
    hit = hit_from_row(table, row, score, sim, float(conf[j]), float(rec[j]), float(lex_scores[j]))
    hit.parts = {k: round(v, 4) for k, v in parts.items()}
    return hit


def restates(a: str, b: str) -> bool:
    """Whether two texts share at least RESTATE_OVERLAP of their search words (Jaccard of the token sets)."""
    ta, tb = _search_words(a), _search_words(b)
    return bool(ta | tb) and len(ta & tb) / len(ta | tb) >= RESTATE_OVERLAP


# A search compares each shown episode with every near candidate, and the same turns come back search
# after search: a text is tokenized (stemmed) and hashed once.
@kept_per_text(TEXT_CACHE_SIZE // 8)
def _search_words(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


@kept_per_text(TEXT_CACHE_SIZE // 8)
def text_hash(text: str) -> str:
    """content_hash, kept per text (a search hashes its candidates that have no vector)."""
    return content_hash(text)


def date_of(row: dict[str, Any]) -> datetime | None:
    """When what a row states holds: a fact's valid_from (else when it was asserted), an episode's time."""
    return row.get("valid_from") or row.get("asserted_at") or row.get("created_at")


def stated_at(row: dict[str, Any]) -> datetime | None:
    """When a row was stated: a fact's valid_from, else its (or an episode's) time."""
    return row.get("valid_from") or row.get("created_at")


def near_kind(shown: dict[str, Any], candidate: dict[str, Any]) -> str | None:
    """How a `candidate` row near a `shown` row relates to it: "disputes" (it denies it, a negation or
    antonym: both sides of a contested pair are shown), "apart" (one is a digest: a list of turns neither
    restates nor updates a statement, both are shown), "updates" (it restates it later with another value:
    a knowledge update, it takes the slot), or None (a restatement, folded under it). One valence check."""
    if DIGEST in (shown.get("claim_type"), candidate.get("claim_type")):
        return "apart"
    conflict = valence_conflict(shown["text"], candidate["text"])
    if conflict in ("negation", "antonym"):
        return "disputes"
    later, earlier = stated_at(candidate), stated_at(shown)
    if conflict == "different value" and later is not None and earlier is not None and later > earlier:
        return "updates"
    return None


def hit_from_row(table: str, row: dict[str, Any], score: float, sim: float | None, conf: float, rec: float,
                 lex: float) -> Hit:
    """The Hit of a candidate row with its scores, rounded as results show them (relevance 0 until the list
    is final: engram.query.matches.show_order)."""
    return Hit(
        id=row["id"], table=table, text=row["text"], score=round(score, 6),
        similarity=None if sim is None else round(sim, 6), relevance=0.0,
        confidence=round(conf, 6), recency=round(rec, 6), lexical_score=round(lex, 6),
        created_at=row.get("created_at"), content_hash=row.get("content_hash") or "",
        tags=list(row.get("tags") or []), status=row.get("status"), role=row.get("role"),
        session_id=row.get("session_id"), kind=row.get("kind"), claim_type=row.get("claim_type"),
        date=date_of(row), valid_to=row.get("valid_to"),
    )
