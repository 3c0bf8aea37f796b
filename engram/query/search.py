"""Active search: hybrid (BM25 + vector, reciprocal rank fusion) over facts and episodes."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import ExitStack
from datetime import datetime
from typing import Any

import numpy as np

from engram import clock
from engram.arrays import unique_sorted
from engram.embed.models import identity_before_load
from engram.errors import EmbedderUnavailable, InvalidInput
from engram.index.blas import single_threaded
from engram.index.cache import table_index
from engram.index.published import PUBLISHED, fill_ahead
from engram.index.vector_index import (
    NO_CONTEXT,
    Context,
    PendingFill,
    TableIndex,
    remember_filled,
    unit_signatures,
)
from engram.query import answer_order, candidates, matches
from engram.query.budget import RENDERERS, below_replacements, candidate_count, interleaved, pack, require_budget
from engram.query.common import (
    embed_query,
    embedder_of,
    require_int,
    require_tags,
    require_text,
)
from engram.query.contested import mark_contested
from engram.query.fact_sources import add_stored_sources
from engram.query.hits import Hit
from engram.query.ranking import (
    RRF_K,
    RRF_WEIGHT_LEXICAL,
    RRF_WEIGHT_TIME,
    RRF_WEIGHT_VECTOR,
    Lenders,
    rank,
)
from engram.query.snippets import matching_passage
from engram.settings import Settings
from engram.store import db, hot_path
from engram.store.sharding import for_tenant
from engram.store.tenant import normalise_user_id
from engram.text.dates import is_time_expression, parser_loaded
from engram.text.sentences import DIGEST
from engram.text.time_window import TimeWindow, query_windows

log = logging.getLogger(__name__)

SEARCH_TYPES = {"facts": ("facts",), "episodes": ("episodes",), "both": ("facts", "episodes")}
METHODS = ("hybrid", "vector", "lexical")
MODES = ("active", "passive")
# A turn borrows part of its session neighbours' scores (the fusion constants: engram.query.ranking),
# because an answer sits next to the turn that shares the question's words: a turn after a question
# borrows much of the question's score, and any turn a little of the turn after it (CONTEXT: before,
# after; the index links a row to the row before it only when that row asks something). Chosen on the
# LoCoMo development split and checked leave-one-conversation-out on its five conversations
# (bench/quality/LOCOMO_LOCO.md).
CONTEXT: Context = (0.75, 0.25)
STALE_STATUSES = {"superseded", "retracted"}
STALE_EPISODE_WEIGHT = 0.5    # an episode whose every fact was replaced by a newer one ranks this much lower
MIN_CANDIDATES = 20           # vector top-20 (and lexical top-20) at least, per table
# A question that names a time ("on 9 November, 2022", "last week") ranks the rows dated inside it a
# third time (engram.query.ranking.RRF_WEIGHT_TIME); WINDOW_CAP bounds the rows read.
WINDOW_CAP = 20_000
# A window holding more rows than WINDOW_CAP contributes the best of the BROAD_POOL rows nearest the
# query (1M facts: 5 ms for 500, 16 ms for 1,000; scoring the 20,000 capped rows one by one took ~150 ms).
BROAD_POOL = 500
WINDOW_SQL = {"episodes": "queries/query/episode_ids_in_window", "facts": "queries/query/fact_ids_in_window"}
# The first question of a process that names a time loads the date parser (~0.5 s): on this thread while
# the query is embedded (a one-shot `engram search "... last week"`: ~0.2 s sooner to its answer).
_FIRST_DATES = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-dates")
# The first search of a process loads the embedding model (~0.2-0.3 s; onnxruntime lets go of the GIL):
# on this thread while the store is opened and the tenant's indexes are mapped (a one-shot `engram search`
# at 1M facts: up to 0.25 s sooner to its answer, bench/perf/SEARCH.md).
_FIRST_EMBED = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-embed")
# In a table of this many vectors the nearest rows are found on this pool while BM25 scores the query's
# words: the graph search is native code that lets go of the GIL, and at 1M rows each takes milliseconds.
OVERLAP_NEAR_MIN = 100_000
_NEAR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="engram-near")  # a few searches at once


def search_memory(
    query: str,
    search_type: str = "both",
    limit: int | None = None,
    user_id: str | None = None,
    as_of: datetime | str | None = None,
    *,
    settings: Settings,
    con: db.Connection | None = None,
    mode: str = "active",
    method: str = "hybrid",
    include_private: bool = False,
    include_tags: list[str] | None = None,
    exclude_tags: list[str] | None = None,
    kinds: list[str] | None = None,
    embedder: Any = None,
    max_tokens: int | None = None,
    include_sources: bool = False,
    explain: bool = False,
    render: str = "text",
) -> list[Hit]:
    """Blocking active search: the best `limit` diverse facts and/or episodes for the query.

    With `max_tokens`, the memories worth most per token whose rendered payload (`render`: "text", the lines a
    caller reads, or "json", the MCP reply) fits that many tokens, as a engram.query.budget.Packed (a list of
    the hits with the exact payload, its token count and what did not fit); `limit` then caps the count.
    """
    require_text(query, "query")
    if max_tokens is not None:
        budget = require_budget(max_tokens)
        if render not in RENDERERS:
            raise InvalidInput(f"render: expected one of {sorted(RENDERERS)}, got {render!r}")
        cap = None if limit is None else require_int(limit, "limit", 1, 100)
        want = candidate_count(budget, cap)

        def ranked(types: str) -> list[Hit]:
            return search_memory(query, types, want, user_id, as_of, settings=settings, con=con, mode=mode,
                                 method=method, include_private=include_private, include_tags=include_tags,
                                 exclude_tags=exclude_tags, kinds=kinds, embedder=embedder)

        if search_type == "both":
            hits = below_replacements(interleaved(ranked("episodes"),
                                                  [h for h in ranked("facts") if h.claim_type != "digest"]))
        else:
            hits = ranked(search_type)
        return pack(hits, query, budget, render, cap, include_sources=include_sources, explain=explain)
    user_id = normalise_user_id(user_id)
    settings = for_tenant(settings, user_id)
    if not isinstance(search_type, str) or search_type not in SEARCH_TYPES:
        raise InvalidInput(f"search_type: expected one of {sorted(SEARCH_TYPES)}, got {search_type!r}")
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidInput(f"method: expected one of {list(METHODS)}, got {method!r}")
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidInput(f"mode: expected one of {list(MODES)}, got {mode!r}")
    limit = require_int(settings.top_k if limit is None else limit, "limit", 1, 100)
    filters = candidates.Filters(
        user_id=user_id, now=clock.now(), as_of=clock.as_naive_utc(as_of),
        include_private=bool(include_private),
        include_tags=tuple(require_tags(include_tags, "include_tags")),
        exclude_tags=tuple(require_tags(exclude_tags, "exclude_tags")),
        kinds=tuple(require_tags(kinds, "kinds")) if kinds is not None else None,
        min_confidence=settings.deprecate_below if mode == "active" else settings.passive_min_confidence,
        decay_rate=settings.decay_rate, passive=mode == "passive",
    )
    windows_soon = None
    if method != "lexical" and not parser_loaded() and is_time_expression(query):
        windows_soon = _FIRST_DATES.submit(query_windows, query, filters.at)
    windows = query_windows(query, filters.at) if windows_soon is None else []
    qvec = None
    ahead = identity_before_load(settings) if method != "lexical" and embedder is None else None
    embedding_soon = _FIRST_EMBED.submit(embed_query, settings, [query]) if ahead is not None else None
    if method == "lexical":
        if embedder is None:
            from engram import embed as embedders

            embedder = embedders.from_settings(settings)
    elif embedding_soon is None:
        qvec, embedder = _embed_with_fill(settings, query, user_id, embedder)
    tables = SEARCH_TYPES[search_type]
    with ExitStack() as stack:
        try:
            # None while another process holds the store (or the hot path skips it): the published indexes
            # and the inbox answer
            reader = con if con is not None else None if hot_path.off_store(settings) else \
                stack.enter_context(db.open_reader_if_free(settings))
        except BaseException:
            if embedding_soon is not None:
                embedding_soon.result()  # an embedder that fails says so first, as it does without the overlap
            raise
        if embedding_soon is not None:
            _map_indexes(reader, settings, tables, user_id, *ahead)
            vectors, embedder = embedding_soon.result()
            qvec = vectors[0]
        if windows_soon is not None:
            windows = windows_soon.result()
        return _search(reader, settings, query, qvec, embedder, tables, limit, filters, method, windows)


def _embed_with_fill(settings: Settings, query: str, user_id: str, embedder: Any) -> tuple[np.ndarray, Any]:
    """The query's vector, embedded in one run with the tenant's newest inbox texts that have none yet
    (kept for the search's fill: one model run per search, not two, after a write)."""
    embedder = embedder_of(settings, embedder)
    ahead = fill_ahead(settings, user_id, embedder.model, embedder.dim, settings.search_embed_pending)
    if ahead:
        try:
            vectors, _ = embed_query(settings, [query, *ahead], embedder)
        except EmbedderUnavailable:  # a pending text the embedder refuses must not fail the query: retry alone
            pass
        else:
            remember_filled(embedder.model, ahead, vectors[1:], embedder.dim)
            return vectors[0], embedder
    vectors, _ = embed_query(settings, [query], embedder)
    return vectors[0], embedder


def _map_indexes(con: db.Connection, settings: Settings, tables: tuple[str, ...], user_id: str, model: str,
                 dim: int) -> None:
    """Open the indexes the search below will use (it then finds them in the process's caches): the
    same calls it makes, so the same fallbacks and warnings."""
    for table in ("episodes", "facts") if "facts" in tables else ("episodes",):  # facts borrow episodes' ranks
        table_index(con, settings, table, user_id, model, dim)


def _search(
    con: db.Connection, settings: Settings, query: str, qvec: np.ndarray | None, embedder: Any,
    tables: tuple[str, ...], limit: int, f: candidates.Filters, method: str, windows: list[TimeWindow],
) -> list[Hit]:
    with single_threaded():
        if "facts" not in tables:
            hits = candidates.retrying(_search_one, con, settings, "episodes", query, qvec, embedder, limit, f,
                                       method, windows=windows)
            hits = answer_order.latest_count_first(matches.matching(hits, query), query)
            mark_contested(con, hits, f.user_id)
        else:
            hits = candidates.retrying(_search_units, con, settings, query, qvec, embedder, tables, limit, f,
                                       method, windows)
    matches.show_order(hits, matches.score_top(method, RRF_K, RRF_WEIGHT_VECTOR, RRF_WEIGHT_LEXICAL,
                                               RRF_WEIGHT_TIME if windows else 0.0))
    log.info("search: %d hit(s) from %s", len(hits), ",".join(tables))
    return hits


def _search_one(
    con: db.Connection, settings: Settings, table: str, query: str, qvec: np.ndarray | None, embedder: Any,
    limit: int, f: candidates.Filters, method: str, also: list[str] | None = None,
    windows: list[TimeWindow] | None = None, lenders: Lenders = (), signature: tuple | None = None,
) -> list[Hit]:
    # episodes the embedding queue has not reached yet are embedded here (a few), so they are found by meaning
    fill = (PendingFill(embedder.embed, settings.search_embed_pending, embedder.model)
            if table == "episodes" and method != "lexical" and qvec is not None else None)
    index = table_index(con, settings, table, f.user_id, embedder.model, embedder.dim, signature, fill)
    return search_table(con, settings, index, query, qvec, limit, f, method, also, windows, lenders)


def _search_units(
    con: db.Connection, settings: Settings, query: str, qvec: np.ndarray | None, embedder: Any,
    tables: tuple[str, ...], limit: int, f: candidates.Filters, method: str, windows: list[TimeWindow],
) -> list[Hit]:
    """Memory units: a fact with its source episodes folded under it, or (search_type both) an episode
    no returned fact covers.

    A fact inherits the evidence of the episodes it was extracted from: it is found by the words and
    meaning its sources had, and ranks where its best source episode would. Each episode lends its
    rank to one fact only (its best-ranked statement), so one turn never fills several slots.
    """
    pool = max(3 * limit, MIN_CANDIDATES)
    # one round trip checks both indexes
    signatures = unit_signatures(con, f.user_id) if con is not None else {"episodes": None, "facts": None}
    episodes = _search_one(con, settings, "episodes", query, qvec, embedder, pool, f, method, windows=windows,
                           signature=signatures["episodes"])
    links = _facts_of_episodes(con, settings, f.user_id, embedder, [h.id for h in episodes]) if episodes else []
    facts_of: dict[str, list[str]] = defaultdict(list)
    has_current: set[str] = set()
    has_replaced: set[str] = set()
    at = f.as_of or f.now
    stale = {fid for _, fid, status, _, _, claim in links if status in STALE_STATUSES and claim != DIGEST}
    current_of = _current_versions(con, f.user_id, sorted(stale)) if stale and f.as_of is None else {}
    via_update: set[tuple[str, str]] = set()  # (episode, current fact) where the episode stated an earlier version
    for episode_id, fact_id, status, valid_from, valid_to, claim in links:
        in_force = (valid_from is None or valid_from <= at) and (valid_to is None or valid_to > at)
        holds = in_force and (status == "active" or (f.as_of is not None and status == "superseded"))
        if claim == DIGEST:
            # a digest lists the turn (or quotes it): the turn lends it its rank while the digest holds,
            # and a retired digest says nothing of whether what the turn said is current
            if holds:
                facts_of[episode_id].append(fact_id)
            continue
        if fact_id in current_of:
            # what this episode said has a newer version: the current version stands where the episode
            # ranks and lists it among its sources (the old value is not buried, and not shown first)
            facts_of[episode_id].append(current_of[fact_id])
            via_update.add((episode_id, current_of[fact_id]))
            has_current.add(episode_id)
            continue
        facts_of[episode_id].append(fact_id)
        if holds:
            has_current.add(episode_id)
        elif status in STALE_STATUSES or (valid_to is not None and valid_to <= at):
            has_replaced.add(episode_id)
    replaced = has_replaced - has_current  # every fact this episode stated has a newer version
    for ep in episodes:
        if ep.id in replaced:
            # what this episode said has a newer version: it ranks below current memories, labelled
            ep.score = round(ep.score * STALE_EPISODE_WEIGHT, 6)
            ep.status = "superseded"
    linked = sorted({fid for fids in facts_of.values() for fid in fids})
    lenders = [(ep.score, facts_of[ep.id]) for ep in episodes if ep.id in facts_of]
    # without episodes to lend their scores the facts' order cannot change: the top `limit` suffice
    fact_pool = pool if links else limit
    facts = _search_one(con, settings, "facts", query, qvec, embedder, fact_pool, f, method, linked, windows,
                        lenders, signatures["facts"])
    fact_by_id = {h.id: h for h in facts}
    folded: dict[str, list[Hit]] = defaultdict(list)
    stands_for = {a: h.id for h in facts for a in h.absorbed}  # a near-duplicate fact -> the fact shown for it
    for ep in episodes:
        for fid in sorted({stands_for.get(fid, fid) for fid in facts_of.get(ep.id, ())} & fact_by_id.keys()):
            folded[fid].append(ep)
    direct = {(e, stands_for.get(fid, fid)) for e, fid, *_ in links}
    via_update = {(e, stands_for.get(fid, fid)) for e, fid in via_update} - direct
    for h in facts:
        h.sources = [{"id": e.id, "created_at": e.created_at, "text": e.text,
                      **({"replaced": True} if (e.id, h.id) in via_update else {})} for e in folded.get(h.id, ())]
    # the facts that can be returned (at most `limit`, best first) list every source episode, ranked or not
    add_stored_sources(con, sorted(facts, key=lambda h: (-h.score, h.id))[:limit], f)
    units: list[Hit] = list(facts)
    if "episodes" in tables:
        units += episodes
    # facts first on a tie: a fact that inherited an episode's score stands for it
    units.sort(key=lambda h: (-h.score, h.table != "facts", h.id))
    units = matches.matching(units, query, episodes)
    out: list[Hit] = []
    covered: set[str] = set()
    shown: set[str] = set()
    for h in units:
        if h.table == "episodes" and h.id in covered:
            continue
        own = {src["id"] for src in h.sources if not src.get("replaced")}
        if h.table == "facts" and own and own <= shown:
            continue  # every episode it rests on is shown above it (an answer ranked the episode first)
        out.append(h)
        covered.update(src["id"] for src in h.sources)
        if h.table == "episodes":
            shown.add(h.id)
        if len(out) == limit:
            break
    out = answer_order.latest_count_first(out, query)
    mark_contested(con, out, f.user_id)
    return out


def _current_versions(con: db.Connection | None, user_id: str, fact_ids: list[str]) -> dict[str, str]:
    """The active fact that now replaces each superseded fact of `fact_ids` (through a chain of updates), by
    id; none while another process holds the store (the published index keeps no update events)."""
    if con is None:
        return {}
    return dict(db.rows(con, "queries/query/current_fact_versions", user_id=user_id, fact_ids=fact_ids))


def _facts_of_episodes(con: db.Connection | None, settings: Settings, user_id: str, embedder: Any,
                       episode_ids: list[str]) -> list[tuple]:
    """(episode_id, fact_id, status, valid_from, valid_to, claim_type) of the facts made from these episodes:
    from the store, or from the published facts index while another process holds it."""
    if con is None:
        return PUBLISHED.facts_of_episodes(settings, user_id, embedder.model, embedder.dim, episode_ids)
    return db.rows(con, "queries/query/facts_of_episodes", user_id=user_id, episode_ids=episode_ids)


def search_table(
    con: db.Connection, settings: Settings, index: TableIndex, query: str, qvec: np.ndarray | None,
    limit: int, f: candidates.Filters, method: str = "hybrid", also: list[str] | None = None,
    windows: list[TimeWindow] | None = None, lenders: Lenders = (),
) -> list[Hit]:
    """Rank one table: candidates from both rankings (plus the rows `also` names, and the best rows
    dated inside a time the query names), symbolic filters, fusion, lent scores, diversity."""
    if index.n == 0:
        return []
    windows = windows or []
    context = CONTEXT if index.table == "episodes" else NO_CONTEXT
    cap = max(min(settings.db_limit, index.n), 1)
    want = min(max(MIN_CANDIDATES, 4 * limit), cap)
    near_soon = (_NEAR.submit(index.vector_top, qvec, want, context)
                 if method == "hybrid" and qvec is not None and index.n_vectors >= OVERLAP_NEAR_MIN else None)
    try:
        lex = index.lexical_scores(query, context) if method != "vector" else None
        lex_best = float(lex.max()) if lex is not None and lex.size else 0.0  # read once: a 1M-row scan
        # a window holding more rows than the cap is neither listed nor scored row by row (1M rows of
        # "today": ~150 ms of mapped vectors read): its rows are the ones near the query in a deeper vector
        # search, and the ones its words match, each checked for its date
        sized = index.dated_count(windows) if windows and index.table in WINDOW_SQL else None
        broad = sized is not None and sized > WINDOW_CAP
        dated = np.zeros(0, np.int64) if broad else _window_positions(con, index, f.user_id, windows)
    except BaseException:
        if near_soon is not None:
            wait([near_soon])  # a failed search leaves nothing of it running
        raise
    near = near_soon.result() if near_soon is not None else None

    def inside(rows: np.ndarray) -> np.ndarray:
        return index.dated_mask(rows, windows)

    while True:
        rows = _candidate_rows(index, qvec, lex, want, context, method, lex_best=lex_best, near=near)
        near = None  # found for the first `want`
        if broad:
            rows += _candidate_rows(index, qvec, lex, want, context, method, inside=inside)
        elif len(dated):
            rows += _candidate_rows(index, qvec, lex, want, context, method, among=dated)
        rows = sorted(set(rows) | {int(p) for p in index.positions(also or []) if p >= 0})
        kept = candidates.fetch(con, index, rows, f)
        if len(kept) >= 2 * limit or want >= cap:
            break
        want = min(want * 4, cap)
    if not kept:
        return []
    hits = rank(index, kept, qvec, lex, limit, f, settings, context, method, windows, lenders, lex_best, query)
    if index.table == "episodes":
        _add_passages(hits, query)
    return hits


def _add_passages(hits: list[Hit], query: str) -> None:
    """Give each hit that is a long episode the passage of it that matched the query (its snippet)."""
    for hit in hits:
        span = matching_passage(hit.text, query)
        if span is not None:
            hit.passage = {"start": span[0], "end": span[1], "text": hit.text[span[0]:span[1]].strip()}


def _window_positions(con: db.Connection, index: TableIndex, user_id: str, windows: list[TimeWindow]
                      ) -> np.ndarray:
    """Index positions (ascending) of the tenant's rows dated inside the windows: all of them from an
    index holding the rows' dates; otherwise read from the store, at most WINDOW_CAP per window."""
    if not windows or index.table not in WINDOW_SQL:
        return np.zeros(0, dtype=np.int64)
    held = index.dated_positions(windows)
    if held is not None:
        return held
    ids = [r[0] for w in windows for r in db.rows(con, WINDOW_SQL[index.table], user_id=user_id, start=w.start,
                                                   end=w.end, cap=WINDOW_CAP)]
    pos = index.positions(ids)
    return unique_sorted(pos[pos >= 0])


def _candidate_rows(
    index: TableIndex, qvec: np.ndarray | None, lex: np.ndarray | None, want: int, context: Context, method: str,
    among: np.ndarray | None = None, lex_best: float | None = None,
    inside: Callable[[np.ndarray], np.ndarray] | None = None, near: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[int]:
    """The `want` best rows by each ranking the method uses: of all rows, of the ascending positions
    `among`, or of the rows `inside` accepts (a window too large to list: the best among the BROAD_POOL
    nearest rows, and among the rows its words match); `lex_best`: the highest of all `lex` scores, when
    the caller has it; `near`: index.vector_top(qvec, want, context), when the caller has it."""
    rows: set[int] = set()
    if method != "lexical" and qvec is not None:
        if inside is not None:
            near, _ = index.vector_top(qvec, max(BROAD_POOL, want), context)  # best first
            top = near[inside(near)][:want]
        elif among is None:
            top, _ = near if near is not None else index.vector_top(qvec, want, context)
        else:
            sims = index.similarities(qvec, among)
            top = among[np.argsort(-sims, kind="stable")[:want]]
        rows.update(top.tolist())
    if lex is not None:
        if inside is not None:
            matched = np.flatnonzero(lex > 0)
            matched = matched[inside(matched)]
            pos = matched[top_scored(lex[matched], want)]
        elif among is None:
            pos = top_scored(lex, want, lex_best)
        else:
            pos = among[top_scored(lex[among], want)]
        rows.update(pos.tolist())
    return sorted(rows)


# top_scored looks above these fractions of the best score first: most queries' best `want` rows are
# there, and a scan for them is ~4x cheaper than listing every row that shares a word with the query.
TOP_SCORED_FLOORS = (0.5, 0.125)


def top_scored(scores: np.ndarray, want: int, best: float | None = None) -> np.ndarray:
    """Positions (ascending) of the `want` highest positive scores, ties at the cut going to the lower
    positions; every positive one when there are fewer (`best`: scores.max(), when the caller has it)."""
    if best is None:
        best = float(scores.max()) if scores.size else 0.0
    if best <= 0 or want <= 0:
        return np.zeros(0, np.intp)
    for fraction in (*TOP_SCORED_FLOORS, 0.0):
        # every row scoring below the floor is outside the top `want` once `want` rows reach it
        pos = np.flatnonzero(scores >= best * fraction) if fraction else np.flatnonzero(scores > 0)
        if len(pos) >= want:
            break
    if len(pos) <= want:
        return pos
    values = scores[pos]
    cut = -np.partition(-values, want - 1)[want - 1]  # the want-th highest score
    above = pos[values > cut]
    return np.sort(np.concatenate([above, pos[values == cut][: want - len(above)]]))
