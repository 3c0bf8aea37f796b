"""Ranking one table's candidates: the signals fused by reciprocal rank, lent scores, and the diversity step
that folds restatements, lets a later value take its slot and keeps both sides of a contradiction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engram.index.vector_index import Context, TableIndex
from engram.query import answer_order, candidates
from engram.query.common import recency
from engram.query.hits import Hit, date_of, hit_of, near_kind, restates, text_hash
from engram.settings import Settings
from engram.text.time_window import TimeWindow, in_any

# (score, row ids): a row ranked elsewhere (an episode) lending its score to the rows it stands behind
Lenders = Sequence[tuple[float, Sequence[str]]]
# Fusion constants, chosen on the LoCoMo development split (bench/quality/locomo.py) and kept general:
# a small RRF k rewards agreement at the top; lexical evidence weighs a bit more than MiniLM cosine on
# conversational text (checked leave-one-conversation-out: bench/quality/LOCOMO_LOCO.md).
RRF_K = 10
RRF_WEIGHT_LEXICAL = 1.0
RRF_WEIGHT_VECTOR = 0.8
# the rows dated inside a time the question names, ranked among themselves, fused like the other two
RRF_WEIGHT_TIME = 1.0
DIVERSITY_COSINE = 0.8        # candidates this similar form one cluster; only its best (or its latest update) is kept
EPISODE_CONFIDENCE = 0.5      # raw episodes have no confidence: a neutral value in the ranking
SCAN_PAST_LIMIT = 2           # candidates looked at after the slots are full, per slot


def _lend(score: np.ndarray, ids: list[str], lenders: Lenders) -> np.ndarray:
    """Scores raised by the rows that lend theirs: each lender's score goes to the best-scored of its
    rows among the candidates (a fact ranks where its best source episode would, and one episode
    never lifts several facts). Lent before the cut, so a fact found only by its sources' words
    is not lost to facts that match on their own."""
    at = {row_id: j for j, row_id in enumerate(ids)}
    own = score
    score = score.copy()
    for lent, row_ids in lenders:
        js = [at[r] for r in row_ids if r in at]
        if js:
            best = max(js, key=lambda j: (own[j], ids[j]))
            score[best] = max(score[best], lent)
    return score


def _ranks(keys: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """1-based rank by descending key among eligible entries; 0 where not eligible."""
    ranks = np.zeros(len(keys), dtype=np.int64)
    idx = np.flatnonzero(eligible)
    order = idx[np.argsort(-keys[idx], kind="stable")]
    ranks[order] = np.arange(1, len(order) + 1)
    return ranks


def rank(
    index: TableIndex, kept: dict[str, dict[str, Any]], qvec: np.ndarray | None, lex: np.ndarray | None,
    limit: int, f: candidates.Filters, settings: Settings, context: Context, method: str,
    windows: list[TimeWindow] | None = None, lenders: Lenders = (), lex_best: float = 0.0, query: str = "",
) -> list[Hit]:
    """The hits of one table, best first: the candidates `kept` (candidates.fetch) ranked by each signal the
    method uses and fused (reciprocal rank, plus the rows dated inside a time the query names), scores lent
    by `lenders`, a question asking a quantity weighing what states none lower, then the diversity step: a
    candidate near a hit shown above it is folded under it, takes its slot as a later value of the same
    thing, or (a denial of it) is shown beside it. Past `limit`, only such near candidates are looked at."""
    ids = sorted(kept)
    pos = np.array([kept[i]["pos"] for i in ids], dtype=np.int64)  # candidates.fetch read them at these positions
    has_vec = index.vec_row[pos] >= 0
    cand_vecs = np.zeros((len(pos), index.dim), dtype=np.float32)  # read once: an on-disk index pays per read
    if has_vec.any():
        cand_vecs[has_vec] = index.vectors(index.vec_row[pos[has_vec]])
    if qvec is not None:
        sims = cand_vecs @ qvec
        ctx = sims.copy()
        for weight, nb in zip(context, (index.prev[pos], index.next[pos]), strict=True):
            ok = nb >= 0
            if weight > 0 and ok.any():
                ctx[ok] += weight * index.similarities(qvec, nb[ok])
    else:
        sims = ctx = np.zeros(len(pos), dtype=np.float32)
    conf = np.array([float(kept[i].get("confidence", EPISODE_CONFIDENCE) or 0.0) for i in ids])
    rec = np.array([recency(kept[i].get("created_at"), f.at) for i in ids])
    relevance = settings.weight_similarity * ctx + settings.weight_confidence * conf + settings.weight_recency * rec
    lex_scores = lex[pos] if lex is not None else np.zeros(len(pos), dtype=np.float32)
    lex_top = lex_best if lex_best > 0 else 1.0
    score = np.zeros(len(pos))
    if method != "lexical":
        vrank = _ranks(relevance, has_vec)
        score += np.where(vrank > 0, RRF_WEIGHT_VECTOR / (RRF_K + vrank), 0.0)
    if method != "vector":
        lrank = _ranks(lex_scores, lex_scores > 0)
        score += np.where(lrank > 0, RRF_WEIGHT_LEXICAL / (RRF_K + lrank), 0.0)
    if method == "vector":
        score = np.where(has_vec, relevance, 0.0)
    if windows:
        # the rows dated inside the time asked about, ranked among themselves by the fused score
        inside = np.array([in_any(windows, date_of(kept[i])) for i in ids]) & (score > 0)
        trank = _ranks(score, inside)
        score = score + np.where(trank > 0, RRF_WEIGHT_TIME / (RRF_K + trank), 0.0)
    if lenders:
        score = _lend(score, ids, lenders)
    weights = answer_order.weights([kept[i]["text"] for i in ids], query)
    if weights is not None:  # a question asking a quantity: what states none ranks lower, before the cut
        score = score * weights
    order = np.argsort(-score, kind="stable")

    def matched(j: int) -> dict[str, float]:
        return {"semantic": float(ctx[j]) if has_vec[j] and qvec is not None else 0.0,
                "lexical": min(float(lex_scores[j]) / lex_top, 1.0),
                "dated": float(bool(windows) and in_any(windows, date_of(kept[ids[j]]))),
                "after_question": float(context[0] > 0 and index.prev[pos[j]] >= 0)}

    # candidate j is a near restatement of a hit shown so far when its cosine with that hit's candidate
    # reaches DIVERSITY_COSINE: compared with the shown ones only (a few), not every candidate with every other
    hits: list[Hit] = []
    owner = np.full(len(pos), -1, np.int64)  # candidate index -> the hit it is shown as (hits with a vector)
    shown_rows: list[int] = []  # candidates with an owner, in the order they were shown
    kept_hashes: dict[str, int] = {}  # content hash -> index of the hit that shows it
    # an identical text has the identical vector, so with a vector on every candidate the cosine test
    # folds exact duplicates too and no candidate's text needs hashing before it is shown
    hash_all = not has_vec.all()
    scanned_past_limit = 0
    for j in order:
        if score[j] <= 0:
            break
        if len(hits) >= limit:
            # past the last slot only a near restatement (an update, a duplicate to fold) matters;
            # those rank close to what they restate, so the scan stops a few slots' worth further on
            scanned_past_limit += 1
            if scanned_past_limit > SCAN_PAST_LIMIT * limit:
                break
        row = kept[ids[j]]
        if hash_all:
            row["content_hash"] = row.get("content_hash") or text_hash(row["text"])
            if row["content_hash"] in kept_hashes:
                hits[kept_hashes[row["content_hash"]]].absorbed.append(row["id"])
                continue
        near = None
        if has_vec[j] and shown_rows:
            shown = np.asarray(shown_rows, np.int64)
            close = owner[shown[cand_vecs[shown] @ cand_vecs[j] >= DIVERSITY_COSINE]]
            if index.table == "episodes" and len(close):
                close = np.array([h for h in close if restates(hits[h].text, row["text"])], np.int64)
            near = int(close.min()) if len(close) else None
        kind = near_kind(kept[hits[near].id], row) if near is not None else None
        if kind in ("disputes", "apart"):
            near = None  # the other side of a contradiction, or a digest, is no restatement: both are shown
        if near is None and len(hits) >= limit:
            continue  # every slot is taken: a later candidate can only take one as an update
        if near is not None:
            if kind == "updates":
                # the later statement of the same thing with another value is the current one: it takes the slot
                hit = hit_of(index.table, row, j, hits[near].score, sims, has_vec, qvec, lex_scores, lex_top, rec,
                              conf)
                hit.absorbed = [*hits[near].absorbed, hits[near].id]
                hit.match = matched(j)
                hits[near] = hit
                kept_hashes[hit.content_hash] = near
            else:
                hits[near].absorbed.append(row["id"])
            continue
        hit = hit_of(index.table, row, j, float(score[j]), sims, has_vec, qvec, lex_scores, lex_top, rec, conf)
        hit.match = matched(j)
        kept_hashes[hit.content_hash] = len(hits)
        if has_vec[j]:
            owner[j] = len(hits)  # later candidates are compared with this one's vector, as before an update
            shown_rows.append(int(j))
        hits.append(hit)
    return hits
