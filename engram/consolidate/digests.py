"""Stage digest: memories that gather what people said across turns, each resting on the turns it lists.

A fact is one statement; a question like "in what order did I bring up ..." or "summarise how my
project went" is answered by many turns of many sessions. After the night's merge, for a tenant whose
episodes this run consolidated, the digests are rebuilt from its human turns of the digest window (the
days before its newest new episode), leaving out a turn whose every statement a newer value replaced:

- thread: the turns about one topic spanning two or more sessions, in time order: an HDBSCAN cluster of
  all the turns' vectors, or of the turns the sessions opened with (a topic taken up again in a new
  session);
- day: the turn that opened each session of one day, in time order.

A digest lists each turn as "date speaker: its first sentence", at most DIGEST_ENTRIES turns (a longer
group is cut in time order into several digests). Its vector is the mean of its turns' vectors (its text
is longer than the embedder reads) and it rests on its turns (extracted_from). Digests are facts of
claim_type "digest": searched and shown like facts, never paired, merged, updated or decayed. A stored
digest sharing turns with a new one is superseded by it (an event names the new one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from engram.consolidate import speakers
from engram.consolidate.cluster import cluster_embeddings
from engram.consolidate.context import StageContext, StagePlan, vectors_of
from engram.consolidate.fact_rows import fact_row
from engram.embed.models import Embedder
from engram.store import db, fact_ops
from engram.store.fact_ops import FactChange
from engram.text.normalize import stable_id

DIGEST = "digest"      # the claim_type of a digest
DIGEST_ENTRIES = 8     # turns listed by one digest: what an agent can read at a glance
LEAD_CHARS = 160       # a listed turn's first sentence is cut here
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
CODE_BLOCK = re.compile(r"^\s*```.*?(?:^\s*```[^\n]*$|\Z)", re.DOTALL | re.MULTILINE)  # fenced code, to its end
MARKUP = re.compile(r"^\s*(?:#+|[-*+>]|\d+[.)])\s+")


def lead(text: str, limit: int = LEAD_CHARS) -> str:
    """The first sentence of a turn's first line of prose, whitespace collapsed, cut at a word under `limit`."""
    prose = CODE_BLOCK.sub("\n", text)
    line = next((MARKUP.sub("", ln).strip() for ln in prose.splitlines() if ln.strip()), "")
    first = " ".join(SENTENCE_END.split(line, maxsplit=1)[0].split())
    if len(first) <= limit:
        return first
    cut = first[:limit].rsplit(" ", 1)[0]
    return (cut or first[:limit]) + " ..."


def thread_groups(vectors: np.ndarray, sessions: list[str | None], min_cluster_size: int, pca_dims: int,
                  min_similarity: float) -> list[list[int]]:
    """Rows of each topic taken up in two or more sessions: clusters of the turns' vectors whose every member
    is within `min_similarity` of the other members' centroid."""
    labels = cluster_embeddings(vectors, min_cluster_size, pca_dims, min_similarity)
    groups = []
    for label in sorted(set(labels.tolist()) - {-1}):
        rows = coherent(vectors, np.flatnonzero(labels == label).tolist(), min_similarity)
        if len(rows) >= 2 and len({sessions[i] for i in rows}) >= 2:
            groups.append(rows)
    return groups


def coherent(vectors: np.ndarray, rows: list[int], min_similarity: float) -> list[int]:
    """The rows whose cosine to the centroid of the other rows is at least `min_similarity`, dropping the
    farthest one at a time. A centroid counting the row itself flatters a small cluster: four unrelated
    unit vectors are each about 0.5 from their mean."""
    rows = list(rows)
    while len(rows) >= 2:
        total = vectors[rows].sum(axis=0)
        others = total[None, :] - vectors[rows]
        norms = np.linalg.norm(others, axis=1)
        cos = np.einsum("ij,ij->i", vectors[rows], others) / np.where(norms == 0, 1.0, norms)
        worst = int(np.argmin(cos))
        if cos[worst] >= min_similarity:
            return rows
        rows.pop(worst)
    return rows


def widest(groups: list[list[int]]) -> list[list[int]]:
    """The groups no other group contains (one of equal groups): a topic found twice is one thread."""
    sets = [frozenset(g) for g in groups]
    keep = []
    for k, g in enumerate(sets):
        if not any(g < other or (g == other and j < k) for j, other in enumerate(sets)):
            keep.append(groups[k])
    return keep


def day_groups(sessions: list[str | None], times: list[datetime]) -> list[list[int]]:
    """Rows of the turns that opened a session (the first of each session), grouped by their day."""
    opened: dict[str, int] = {}
    for i, s in enumerate(sessions):
        if s is not None and (s not in opened or times[i] < times[opened[s]]):
            opened[s] = i
    by_day: dict[Any, list[int]] = {}
    for i in opened.values():
        by_day.setdefault(times[i].date(), []).append(i)
    return list(by_day.values())


def chunks(rows: Iterable[int], times: list[datetime], size: int = DIGEST_ENTRIES) -> list[list[int]]:
    """A group's rows in time order, cut into digests of at most `size`; a lone last row joins none."""
    ordered = sorted(rows, key=lambda i: (times[i], i))
    return [part for k in range(0, len(ordered), size) if len(part := ordered[k:k + size]) >= 2]


def digest_text(kind: str, rows: list[int], contents: list[str], speakers: list[str | None],
                times: list[datetime]) -> str:
    """The digest's text: a heading, then one line per turn ("2024-03-15 user: its first sentence")."""
    start, end = times[rows[0]], times[rows[-1]]
    span = f"{start:%Y-%m-%d}" if start.date() == end.date() else f"{start:%Y-%m-%d} to {end:%Y-%m-%d}"
    heading = f"How each session of {span} began:" if kind == "day" else f"One topic across sessions, {span}:"
    lines = (f"{times[i]:%Y-%m-%d} {speakers[i] or 'someone'}: {lead(contents[i])}" for i in rows)
    return "\n".join([heading, *lines])


@dataclass
class Digests:
    """The digests one night writes: fact rows, their extracted_from sources, the digests they supersede."""

    facts: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[FactChange] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """The stage counts of the digests."""
        return {"digests_created": len(self.facts), "digests_superseded": len(self.replaced)}


def plan_digests(ctx: StageContext, embedder: Embedder, newest: datetime) -> Digests:
    """The digests of the tenant's human turns said since `newest` (the newest new episode) - digest_window_days,
    and the active digests they replace (those sharing a turn with a new digest that is not already stored)."""
    s = ctx.settings
    since = newest - timedelta(days=s.digest_window_days)
    with ctx.open() as con:
        turns = db.query(con, "queries/consolidate/digest_turns", user_id=ctx.user_id, since=since, until=ctx.as_of,
                         model=embedder.model, dim=embedder.dim)
        stored = db.rows(con, "queries/consolidate/active_digests", user_id=ctx.user_id, since=since)
    if turns.height:  # the human turns; a turn whose every statement was replaced by a newer value is history
        turns = turns.filter(pl.Series(speakers.voiced(turns, s)) & ~turns["replaced"])
    if turns.height < 2:
        return Digests()
    vecs = vectors_of(turns["embedding"], embedder.dim)
    sessions, times = turns["session_id"].to_list(), turns["created_at"].to_list()
    threads = thread_groups(vecs, sessions, s.min_cluster_size, s.pca_dims, s.cluster_min_similarity)
    days = day_groups(sessions, times)
    openers = sorted(i for g in days for i in g)
    if len(openers) >= 2:  # the topics sessions opened with: a thread of requests across sessions
        threads += [[openers[j] for j in g] for g in thread_groups(
            vecs[openers], [sessions[i] for i in openers], 2, s.pca_dims, s.cluster_min_similarity)]
    groups = [("thread", g) for g in widest(threads)] + [("day", g) for g in days]
    out = Digests()
    have = {fid for fid, _ in stored}
    made: dict[str, set[str]] = {}
    cols = {c: turns[c].to_list() for c in ("id", "role", "content", "visibility", "is_private", "tags", "created_at")}
    for kind, group in groups:
        for rows in chunks(group, times):
            ids = [cols["id"][i] for i in rows]
            fid = stable_id("fact", ctx.user_id, DIGEST, kind, *ids)
            made[fid] = set(ids)
            if fid in have or any(f["id"] == fid for f in out.facts):
                continue
            vector = vecs[rows].mean(axis=0)
            vector = vector / (np.linalg.norm(vector) or 1.0)
            row = fact_row(ctx, fid, digest_text(kind, rows, cols["content"], cols["role"], times), rows, cols, vector, embedder,
                           f"{kind} digest of {len(rows)} turns", DIGEST)
            out.facts.append({**row, "category": kind})
            out.sources += [{"fact_id": fid, "episode_id": eid, "relation": "extracted_from",
                             "similarity": float(vecs[i] @ vector)} for i, eid in zip(rows, ids, strict=True)]
    for fid, members in stored:
        if fid in made:
            continue
        members = set(members or [])
        successor = max(made, key=lambda m: len(made[m] & members), default=None)
        if successor is not None and made[successor] & members:
            out.replaced.append(FactChange(fid, "superseded", f"digest rebuilt as {successor}",
                                           status="superseded", valid_to=ctx.as_of, related_fact_id=successor))
    return out


def digest(ctx: StageContext, embedder: Embedder) -> StagePlan:
    """The stage: plan the tenant's digests if this run consolidated any of its episodes, and write them."""
    if not ctx.settings.digests:
        return StagePlan({"digests_created": 0, "digests_superseded": 0, "disabled": True})
    with ctx.open() as con:
        newest = db.rows(con, "queries/consolidate/run_newest_episode", user_id=ctx.user_id, run_id=ctx.run_id)[0][0]
    if newest is None:
        return StagePlan({"digests_created": 0, "digests_superseded": 0})
    planned = plan_digests(ctx, embedder, newest)
    return StagePlan(planned.counts(), lambda con: write_digests(con, ctx, planned))


def write_digests(con: db.Connection, ctx: StageContext, digests: Digests) -> None:
    """Write the new digests with their sources and created events, and supersede the ones they replace."""
    if digests.facts:
        with db.registered(con, "incoming_facts", pa.Table.from_pylist(digests.facts)):
            db.execute(con, "queries/consolidate/insert_facts")
            db.execute(con, "queries/consolidate/insert_created_events", run_id=ctx.run_id, now=ctx.as_of)
        fact_ops.add_sources(con, ctx.user_id, ctx.run_id, pl.DataFrame(digests.sources))
    if digests.replaced:
        fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, digests.replaced, ctx.as_of)
