"""Stage digest: memories that gather what people said across turns, each resting on the turns it lists.

A fact is one statement; a question like "in what order did I bring up ..." or "summarise how my
project went" is answered by many turns of many sessions. After the night's merge, for a tenant whose
episodes this run consolidated, the digests are rebuilt from its human turns of the digest window (the
days before its newest new episode), leaving out a turn whose every statement was replaced or retracted:

- thread: the turns about one topic spanning two or more sessions, in time order: an HDBSCAN cluster of
  all the turns' vectors, or of the turns the sessions opened with (a topic taken up again in a new
  session);
- day: the turn that opened each session of one day, in time order.

A digest lists each turn as "date speaker: its first sentence", at most DIGEST_ENTRIES turns (a longer
group is cut in time order into several digests), followed by the first sentence of the reply the turn got
in its session ("/ assistant: ..."; ENGRAM_DIGEST_REPLIES): what the user asked and what they were told.
Its vector is the mean of its turns' vectors (its text is longer than the embedder reads; a reply is
quoted, not what the digest is about) and it rests on its turns and the replies it quotes (extracted_from;
a reply is never counted as evidence). Digests are facts of
claim_type "digest": searched and shown like facts, never paired, merged, updated or decayed. Turns are
grouped only with turns of the same tags (a tag-scoped search never reads another tag's turn). A digest
holds from its last turn or quoted reply on. An active digest of the window that no group makes again is superseded,
by the new digest of its kind it shares most turns with when there is one (an event names it).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from engram.consolidate import speakers
from engram.consolidate.cluster import cluster_embeddings
from engram.consolidate.context import StageContext, StagePlan, vectors_of
from engram.consolidate.fact_rows import VISIBILITY_RANK, fact_row
from engram.embed.models import Embedder
from engram.store import db, fact_ops
from engram.store.fact_ops import FactChange
from engram.text.normalize import stable_id
from engram.text.sentences import DIGEST, split_sentences

DIGEST_ENTRIES = 8     # turns listed by one digest: what an agent can read at a glance
LEAD_CHARS = 160       # a listed turn's first sentence is cut here
CODE_BLOCK = re.compile(r"^\s*```.*?(?:^\s*```[^\n]*$|\Z)", re.DOTALL | re.MULTILINE)  # fenced code, to its end
INDENTED_CODE = re.compile(r"^(?: {4}|\t)")  # markdown's indented code block
MARKUP = re.compile(r"^\s*(?:#+|[-*+>]|\d+[.)])\s+")
REPLYING_ROLES = frozenset({"assistant", "model", "ai", "agent", "bot"})  # an agent answering, not a tool


def lead(text: str, limit: int = LEAD_CHARS, opener_words: int = 0) -> str:
    """The first sentence of a turn's prose (code blocks, indented code and list or heading marks left out),
    whitespace collapsed, cut at a word under `limit`. With `opener_words`, a sentence of fewer words ("Sure!",
    "Great question.") is passed over for the first longer one, on any line, when there is one."""
    prose = CODE_BLOCK.sub("\n", text)
    sentences = (part for ln in prose.splitlines() if not INDENTED_CODE.match(ln)
                 for part in split_sentences(MARKUP.sub("", ln).strip()))
    first = next(sentences, "")
    if opener_words and len(first.split()) < opener_words:
        first = next((part for part in sentences if len(part.split()) >= opener_words), first)
    first = " ".join(first.split())
    if len(first) <= limit:
        return first
    cut = first[:limit].rsplit(" ", 1)[0]
    return (cut or first[:limit]) + " ..."


def reply_lead(text: str) -> str:
    """What a digest quotes of a reply: its first sentence of three words or more (an agent's reply often
    opens with "Certainly!" or a one-word heading)."""
    return lead(text, opener_words=3)


def replies(cols: dict[str, list[Any]], voiced: list[bool], replaced: list[bool]) -> dict[int, int]:
    """Row of a human turn -> row of the reply it got: the first agent turn (role assistant, model, ...; kind
    turn, not of origin tool) after it in its session and before the session's next human turn (rows in time
    order; tool output, system turns, thoughts and events are passed over). A reply is quoted only when it was
    said after the turn (equal times leave the order unknown), has the turn's tags, is no more private than
    it, has prose, and was not replaced or retracted. `cols`: the episode columns, tags as sorted tuples."""
    waiting: dict[str, int] = {}  # session -> its last human turn, not yet answered
    out: dict[int, int] = {}

    def rank(visibility: str | None) -> int:
        return VISIBILITY_RANK.get(visibility or "", 0)

    for i, session in enumerate(cols["session_id"]):
        kind = cols["kind"][i] or "turn"
        if session is None or kind != "turn":  # an event, a thought: neither asked nor answered
            continue
        if voiced[i]:
            waiting[session] = i
        elif session in waiting and (cols["role"][i] or "").strip().lower() in REPLYING_ROLES \
                and (cols["origin"][i] or "").strip().lower() != "tool":
            asked = waiting.pop(session)
            if (cols["created_at"][i] > cols["created_at"][asked] and not replaced[i]
                    and cols["tags"][i] == cols["tags"][asked]
                    and (not cols["is_private"][i] or cols["is_private"][asked])
                    and rank(cols["visibility"][i]) >= rank(cols["visibility"][asked])
                    and reply_lead(cols["content"][i])):
                out[asked] = i
    return out


def thread_groups(vectors: np.ndarray, sessions: list[str | None], min_cluster_size: int, pca_dims: int,
                  min_similarity: float) -> list[list[int]]:
    """Rows of each topic taken up in two or more sessions: clusters of the turns' vectors whose every member
    is within `min_similarity` of the other members' centroid."""
    labels = cluster_embeddings(vectors, min_cluster_size, pca_dims, min_similarity)
    groups = []
    for label in sorted(set(labels.tolist()) - {-1}):
        rows = coherent(vectors, np.flatnonzero(labels == label).tolist(), min_similarity)
        if len(rows) >= 2 and len({sessions[i] for i in rows} - {None}) >= 2:
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
    """A group's rows in time order, cut into as few digests of at most `size` as it takes, of even length
    (9 turns make 5 + 4, not 8 + 1); a lone turn makes none."""
    ordered = sorted(rows, key=lambda i: (times[i], i))
    if len(ordered) < 2:
        return []
    parts = -(-len(ordered) // size)
    return [part.tolist() for part in np.array_split(np.array(ordered), parts)]


def digest_text(kind: str, rows: list[int], contents: list[str], speakers: list[str | None],
                times: list[datetime], answers: dict[int, int] | None = None) -> str:
    """The digest's text: a heading, then one line per turn ("2024-03-15 user: its first sentence"), with
    the first sentence of the reply the turn got (`answers`: row -> its reply's row) after " / "."""
    start, end = times[rows[0]], times[rows[-1]]
    span = f"{start:%Y-%m-%d}" if start.date() == end.date() else f"{start:%Y-%m-%d} to {end:%Y-%m-%d}"
    heading = f"How each session of {span} began:" if kind == "day" else f"One topic across sessions, {span}:"
    answers = answers or {}

    def said(i: int) -> str:
        return f"{speakers[i] or 'someone'}: {lead(contents[i])}"

    def answer(i: int) -> str:
        return f" / {speakers[answers[i]] or 'someone'}: {reply_lead(contents[answers[i]])}" if i in answers else ""

    lines = (f"{times[i]:%Y-%m-%d} {said(i)}{answer(i)}" for i in rows)
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


def grouped_turns(vectors: np.ndarray, sessions: list[str | None], times: list[datetime], min_cluster_size: int,
                  pca_dims: int, min_similarity: float) -> list[tuple[str, list[int]]]:
    """(kind, rows) of every digest group of some turns: threads (of all turns, and of the turns sessions
    opened with; a topic found both ways is one thread), then days."""
    threads = thread_groups(vectors, sessions, min_cluster_size, pca_dims, min_similarity)
    days = day_groups(sessions, times)
    openers = sorted(i for g in days for i in g)
    if len(openers) >= 2:  # the topics sessions opened with: a thread of requests across sessions
        threads += [[openers[j] for j in g] for g in thread_groups(
            vectors[openers], [sessions[i] for i in openers], 2, pca_dims, min_similarity)]
    return [("thread", g) for g in widest(threads)] + [("day", g) for g in days]


def plan_digests(ctx: StageContext, embedder: Embedder, newest: datetime) -> Digests:
    """The digests of the tenant's human turns said since `newest` (the newest new episode) - digest_window_days,
    and the retirement of the active digests of that window that no group makes again.

    Turns are grouped within one set of tags, so a tag-scoped search never reads another tag's turn. A group
    an active digest already lists keeps it; a new group gets an id that no digest ever had."""
    s = ctx.settings
    since = newest - timedelta(days=s.digest_window_days)
    with ctx.open() as con:
        turns = db.query(con, "queries/consolidate/digest_turns", user_id=ctx.user_id, since=since, until=ctx.as_of,
                         model=embedder.model, dim=embedder.dim)
        stored = db.rows(con, "queries/consolidate/active_digests", user_id=ctx.user_id, since=since,
                         model=embedder.model, dim=embedder.dim)
        taken = {r[0] for r in db.rows(con, "queries/consolidate/digest_ids", user_id=ctx.user_id)}
    voiced = speakers.voiced(turns, s) if turns.height else np.zeros(0, dtype=bool)
    human = np.flatnonzero(voiced & ~turns["replaced"].to_numpy()) if turns.height else np.zeros(0, dtype=np.int64)
    out = Digests()
    kept = {(kind, frozenset(members)): (fid, since_) for fid, kind, since_, members, current in stored if current}
    made: dict[str, tuple[str, frozenset[str], datetime]] = {}  # id -> kind, turns, valid_from
    if len(human) >= 2:  # the human turns; a turn whose every statement was replaced or retracted is history
        vecs = vectors_of(turns["embedding"], embedder.dim)
        cols = {c: turns[c].to_list() for c in ("id", "role", "origin", "kind", "content", "visibility", "is_private",
                                                "created_at", "session_id")}
        cols["tags"] = [tuple(sorted(tags or [])) for tags in turns["tags"].to_list()]  # a tag set, to compare
        times = cols["created_at"]
        answers = replies(cols, voiced.tolist(), turns["replaced"].to_list()) if s.digest_replies else {}

        def plan(kind: str, rows: list[int]) -> None:
            """One group: kept when an active digest lists the same turns, else planned under a fresh id."""
            quoted = [answers[i] for i in rows if i in answers]
            ids = [cols["id"][i] for i in [*rows, *quoted]]
            key = (kind, frozenset(ids))
            if key in kept:
                fid, valid_from = kept[key]
                made[fid] = (kind, key[1], valid_from)
                return
            fid = stable_id("fact", ctx.user_id, DIGEST, kind, *ids)
            if fid in taken:  # the same turns made a digest once, since retired: this one is another generation
                fid = stable_id("fact", ctx.user_id, DIGEST, kind, ctx.run_id, *ids)
            if fid in made or fid in taken:
                return
            vector = vecs[rows].mean(axis=0)  # what the people said: a reply is quoted, not what it is about
            vector = vector / (np.linalg.norm(vector) or 1.0)
            # a digest holds from its last turn (or quoted reply) on: before that it did not list what it lists
            last = max(times[i] for i in [*rows, *quoted])
            text = digest_text(kind, rows, cols["content"], cols["role"], times, answers)
            row = fact_row(ctx, fid, text, rows, cols, vector, embedder, f"{kind} digest of {len(rows)} turns",
                           DIGEST, moment=last, quoted=quoted)
            made[fid] = (kind, key[1], last)
            out.facts.append({**row, "category": kind})
            out.sources += [{"fact_id": fid, "episode_id": cols["id"][i], "relation": "extracted_from",
                             "similarity": float(vecs[i] @ vector)} for i in [*rows, *quoted]]

        by_tags: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i in human.tolist():
            by_tags[cols["tags"][i]].append(i)
        for part in by_tags.values():
            groups = grouped_turns(vecs[part], [cols["session_id"][i] for i in part], [times[i] for i in part],
                                   s.min_cluster_size, s.pca_dims, s.cluster_min_similarity)
            for kind, group in groups:
                for rows in chunks([part[j] for j in group], times):
                    plan(kind, rows)
    for fid, kind, valid_from, members, _ in stored:
        if fid in made:
            continue
        shared = {m: len(turns_ & set(members)) for m, (k, turns_, _) in made.items() if k == kind and m != fid}
        successor = max(shared, key=lambda m: shared[m], default=None) if any(shared.values()) else None
        if successor is None:
            out.replaced.append(FactChange(fid, "superseded", "its turns no longer make this digest",
                                           status="superseded", valid_to=ctx.as_of))
        else:  # in force until its successor is, never before it began
            until = max(made[successor][2], valid_from) if valid_from is not None else made[successor][2]
            out.replaced.append(FactChange(fid, "superseded", f"digest rebuilt as {successor}", status="superseded",
                                           valid_to=until, related_fact_id=successor))
    return out


def digest(ctx: StageContext, embedder: Embedder) -> StagePlan:
    """The stage: plan the tenant's digests if this run consolidated any of its episodes, and write them."""
    if not ctx.settings.digests:
        return StagePlan({**Digests().counts(), "disabled": True})
    with ctx.open() as con:
        newest = db.rows(con, "queries/consolidate/run_newest_episode", user_id=ctx.user_id, run_id=ctx.run_id)[0][0]
    if newest is None:
        return StagePlan(Digests().counts())
    planned = plan_digests(ctx, embedder, newest)
    return StagePlan(planned.counts(), lambda con: write_digests(con, ctx, planned))


def write_digests(con: db.Connection, ctx: StageContext, digests: Digests) -> None:
    """Write the new digests with their sources and created events, and supersede the ones they replace."""
    fact_ops.insert_facts(con, ctx.user_id, ctx.run_id, ctx.as_of, digests.facts, digests.sources)
    if digests.replaced:
        fact_ops.apply_changes(con, ctx.user_id, ctx.run_id, digests.replaced, ctx.as_of)
