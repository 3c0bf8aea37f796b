"""`why`: the dependency closure of a claim, node or event, its cycles collapsed, and a minimal support set.

Walk: from the start id, follow supports in reverse (depends_on / derived_from edges from a record,
supports edges into it, and a claim's fact_sources to its episodes), level by level, within
`depth` levels and `max_nodes` records. Claims redirect (same_as / merged_into) to their
canonical claim. Records outside their validity window at `as_of`, retracted records, and
private records (unless asked for) are left out and listed in `filtered`.

Cycles are allowed: strongly connected components (Tarjan) become one cluster node, so the
result is a DAG. Its sinks are the sources. The minimal support set is the smallest set of
active claims lying on every start-to-source path, chosen by the LLM when one is configured
(and its answer checks out), else by the deterministic greedy set cover in graph.greedy_cover
(approximate: within ln(#paths) of the optimum).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from engram import clock
from engram.errors import InvalidInput, LLMError
from engram.llm.base import LLM
from engram.llm.prompt_quote import DATA_RULE, data_block
from engram.store import db
from engram.thoughtdb import claims as claims_mod
from engram.thoughtdb import nodes as nodes_mod
from engram.thoughtdb.common import (
    check_source_refs,
    items,
    new_id,
    require,
)
from engram.thoughtdb.graph import condense, greedy_cover, source_paths

KINDS = ("claim", "node", "event")
ACTIVE_CLAIM = ("active", "pending_embed")
LABEL_CHARS = 200


class SupportPick(BaseModel):
    """The LLM's choice of a minimal support set."""

    claim_ids: list[str]


def _valid_at(item: dict[str, Any], as_of: datetime) -> str | None:
    """Why an item does not hold at as_of, or None if it does."""
    if item["kind"] == "event":
        return None if item["asserted_at"] is None or item["asserted_at"] <= as_of else "after as_of"
    if item["valid_from"] is not None and as_of < item["valid_from"]:
        return "not yet valid"
    if item["status"] == "retracted" and (item["valid_to"] is None or as_of >= item["valid_to"]):
        return "retracted"
    if item["valid_to"] is not None and as_of >= item["valid_to"]:
        return "expired"
    return None


def _redirect_all(con: db.Connection, user_id: str, ids: list[str]) -> dict[str, str]:
    """Canonical id of each claim id that redirects (same_as / merged_into), followed to the end."""
    current = {i: i for i in ids}
    pending = list(ids)
    for _ in range(claims_mod.MAX_REDIRECTS):
        hops = dict(db.rows(con, "queries/thoughtdb/thought_redirects", user_id=user_id, ids=pending)) if pending else {}
        if not hops:
            break
        nxt: set[str] = set()
        for original, cur in current.items():
            target = hops.get(cur)
            if target is not None and target != original:  # a redirect cycle stops where it started
                current[original] = target
                nxt.add(target)
        pending = sorted(nxt)
    return {i: c for i, c in current.items() if c != i}


def trace(
    con: db.Connection,
    user_id: str,
    kind: str,
    start_id: str,
    as_of: datetime | str | None = None,
    depth: int = 5,
    max_nodes: int = 200,
    max_paths: int = 1000,
    include_private: bool = False,
    llm: LLM | None = None,
) -> dict[str, Any]:
    """The why-trace of one record (see the module docstring); a plain dict ready for JSON."""
    require(user_id, "user")
    if kind not in KINDS:
        raise InvalidInput(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    if depth < 0:
        raise InvalidInput("depth: must be >= 0")
    if max_nodes < 1:
        raise InvalidInput("max_nodes: must be >= 1")
    at = clock.as_naive_utc(as_of, "as_of") or clock.now()
    start = require(start_id, "id")
    if kind == "claim":
        start = claims_mod.resolve(con, user_id, start)[-1]
    found = items(con, user_id, [start], include_private=True)
    if start not in found or found[start]["kind"] != kind:
        what = f"a record of kind {found[start]['kind']}" if start in found else "unknown"
        raise InvalidInput(f"id: {start_id!r} is {what}, not a {kind} of tenant {user_id}")
    if found[start]["private"] and not include_private:
        raise InvalidInput(f"id: {start_id!r} is private (use --include-private)")

    info: dict[str, dict[str, Any]] = {start: found[start]}
    level: dict[str, int] = {start: 0}
    links: list[tuple[str, str, str]] = []
    filtered: dict[str, str] = {}
    truncated = False
    frontier = [start]
    for d in range(depth + 1):
        if not frontier:
            break
        parents = db.rows(con, "queries/thoughtdb/thought_why_parents", user_id=user_id, ids=frontier)
        if d == depth:
            truncated = truncated or bool(parents)  # supports exist beyond the depth budget
            break
        redirect = _redirect_all(con, user_id, sorted({p for _, p, _ in parents}))
        parents = [(c, redirect.get(p, p), via) for c, p, via in parents]
        new_ids = sorted({p for _, p, _ in parents} - set(info) - set(filtered))
        fetched = items(con, user_id, new_ids, include_private=True)
        next_frontier: list[str] = []
        for pid in new_ids:
            item = fetched.get(pid)
            reason = "unknown id" if item is None else _valid_at(item, at)
            if reason is None and item["private"] and not include_private:
                reason = "private"
            if reason is not None:
                filtered[pid] = reason
                continue
            if len(info) >= max_nodes:
                truncated = True
                continue
            info[pid] = item
            level[pid] = d + 1
            next_frontier.append(pid)
        links.extend((c, p, via) for c, p, via in parents if p in info and c in info and c != p)
        frontier = next_frontier

    order = sorted(info, key=lambda n: (level[n], n))
    succ: dict[str, list[str]] = {n: [] for n in order}
    for c, p, _ in sorted(set(links)):
        if p not in succ[c]:
            succ[c].append(p)
    dag = condense(order, succ)
    cluster_name = {i: f"cluster:{i}" for i, comp in enumerate(dag.components) if len(comp) > 1}

    start_comp = dag.comp_of[start]
    paths, paths_truncated = source_paths(dag.succ, start_comp, max_paths)
    sinks = sorted({p[-1] for p in paths})
    candidates = {
        n: float(info[n]["confidence"] or 0.0)
        for n in order
        if n != start and info[n]["kind"] == "claim" and info[n]["status"] in ACTIVE_CLAIM
    }
    member_paths = [[m for comp in path for m in dag.components[comp] if m != start] for path in paths]
    support, uncovered = greedy_cover(member_paths, candidates)
    picked_by = "rule"
    if llm is not None and candidates and paths:
        chosen = _llm_pick(llm, info, candidates, member_paths, uncovered)
        if chosen is not None:
            support, picked_by = chosen, f"llm:{llm.model}"

    def label(n: str) -> str:
        text = info[n]["label"] or ""
        return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"

    return {
        "requested_id": start_id,
        "start_id": start,
        "kind": kind,
        "as_of": at.isoformat(),
        "depth": depth,
        "max_nodes": max_nodes,
        "truncated": truncated,
        "start_filtered": _valid_at(found[start], at),
        "nodes": [
            {"id": n, "kind": info[n]["kind"], "subtype": info[n]["subtype"], "status": info[n]["status"],
             "level": level[n], "label": label(n),
             "cluster": cluster_name.get(dag.comp_of[n])}
            for n in order
        ],
        "clusters": [{"id": cluster_name[i], "members": dag.components[i]} for i in sorted(cluster_name)],
        "edges": [{"from": c, "to": p, "via": via} for c, p, via in sorted(set(links))],
        "sources": [m for comp in sinks for m in dag.components[comp]],
        "filtered": [{"id": k, "reason": v} for k, v in sorted(filtered.items())],
        "paths": len(paths),
        "paths_truncated": paths_truncated,
        "support_set": list(support),
        "uncovered_paths": len(uncovered),
        "picked_by": picked_by,
    }


def _llm_pick(
    llm: LLM,
    info: dict[str, dict[str, Any]],
    candidates: dict[str, float],
    paths: list[list[str]],
    uncovered: list[int],
) -> list[str] | None:
    """The LLM's support set if it is valid (known claim ids covering every coverable path), else None."""
    records = [{"claim_id": c, "text": info[c]["label"], "confidence": round(w, 3)} for c, w in sorted(candidates.items())]
    records += [{"path": i, "claim_ids": [m for m in p if m in candidates]} for i, p in enumerate(paths)]
    prompt = (
        "Pick the smallest set of claims such that every path lists at least one chosen claim id.\n"
        + DATA_RULE + " Answer JSON {\"claim_ids\": [...]}.\n"
        + data_block(records)
    )
    try:
        reply = llm.generate(prompt, SupportPick)
    except (LLMError, ValueError):  # no usable answer (a fake without a rule raises ValueError): use the rule
        return None
    chosen = list(dict.fromkeys(getattr(reply.parsed, "claim_ids", [])))
    if not chosen or any(c not in candidates for c in chosen):
        return None
    skip = set(uncovered)
    if any(i not in skip and not set(p) & set(chosen) for i, p in enumerate(paths)):
        return None
    return chosen


def save_trace(con: db.Connection, user_id: str, result: dict[str, Any], now: datetime | None = None) -> str:
    """Store a trace as a Summary node (source_refs: the episodes it reached) with derived_from edges to the support set.

    Saving the same trace again returns the existing node.
    """
    now = now or clock.now()
    events = sorted(n["id"] for n in result["nodes"] if n["kind"] == "event")
    if not events:
        raise InvalidInput("source_refs: the trace reached no episode, so a Summary would have no sources")
    title = f"why {result['kind']} {result['start_id']} as of {result['as_of']}"
    lines = [f"{len(result['nodes'])} records, {result['paths']} path(s) to {len(result['sources'])} source(s); "
             f"support set ({result['picked_by']}):"]
    by_id = {n["id"]: n for n in result["nodes"]}
    lines += [f"- {c}: {by_id[c]['label']}" for c in result["support_set"]]
    body = "\n".join(lines)
    with db.transaction(con):
        check_source_refs(con, user_id, events)
        node_id = nodes_mod.node_id_for(user_id, "Summary", title, body, events)
        if nodes_mod.get_node(con, user_id, node_id, include_private=True, missing_ok=True) is None:
            node_id = nodes_mod.create_node(con, user_id, "Summary", title, events, body=body, now=now, atomic=False)
            for claim_id in [result["start_id"], *result["support_set"]]:
                if by_id[claim_id]["kind"] == "event":
                    continue
                edge_id = new_id("edge", user_id, "derived_from", node_id, claim_id)
                db.execute(con, "queries/thoughtdb/thought_insert_edge", id=edge_id, user_id=user_id,
                           edge_type="derived_from", from_id=node_id, to_id=claim_id, source_refs=events, now=now)
    return node_id
