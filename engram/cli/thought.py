"""CLI of the Thought DB: `engram claim|node|edge|why|kg ...`, each a few lines over engram.thoughtdb."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from engram.store.tenant import normalise_user_option
from engram.text.terminal import echo, safe

User = Annotated[str, typer.Option("--user", help="Tenant (user_id).", callback=normalise_user_option)]
Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Private = Annotated[bool, typer.Option("--include-private", help="Also show private records.")]
Limit = Annotated[int, typer.Option(help="At most this many rows.")]
Refs = Annotated[list[str] | None, typer.Option("--source-ref", help="Episode id backing this (repeatable).")]


@contextmanager
def _store(user: str, read_only: bool = False) -> Iterator[Any]:
    """A connection to the tenant's store (its shard) for one command; typed errors end the command."""
    from engram.cli.app import fail, settings_or_exit
    from engram.errors import EngramError
    from engram.store import db
    from engram.store.sharding import for_tenant

    s = settings_or_exit()
    try:
        with db.open_store(for_tenant(s, user), read_only=read_only) as con:
            yield con
    except EngramError as exc:
        fail(exc)


def _run(user: str, fn: Callable[[Any], Any], read_only: bool = False) -> Any:
    """Run fn(con) against the tenant's store; typed errors end the command with their message."""
    from engram.cli.app import fail
    from engram.errors import EngramError

    with _store(user, read_only) as con:
        try:
            return fn(con)
        except EngramError as exc:
            fail(exc)


def _ids(values: list[str] | None) -> list[str]:
    """Ids from repeated and/or comma-separated options."""
    return [part.strip() for v in values or [] for part in v.split(",") if part.strip()]


def _short(text: Any, n: int = 80) -> str:
    text = "" if text is None else safe(str(text).replace("\n", " "))
    return text if len(text) <= n else text[: n - 1] + "…"


def _out(value: Any, as_json: bool, lines: Callable[[Any], list[str]]) -> None:
    from engram.cli.app import emit

    if as_json:
        emit(value, True)
    else:
        for line in lines(value) or ["(none)"]:
            echo(line)


def _kv(row: dict[str, Any]) -> list[str]:
    return [f"{k:16} {safe(v)}" for k, v in row.items() if not isinstance(v, list | dict)]


def register(app: typer.Typer) -> None:
    """Add the claim, node, edge, why and kg command groups."""
    claim_app = typer.Typer(help="Claims: facts with a claim_type; append-only updates.", no_args_is_help=True)
    node_app = typer.Typer(help="Decision | Action | Summary nodes.", no_args_is_help=True)
    edge_app = typer.Typer(help="Typed edges between claims, nodes and events.", no_args_is_help=True)
    why_app = typer.Typer(help="Why does a claim, node or event hold? Its dependency closure.", no_args_is_help=True)
    kg_app = typer.Typer(help="Knowledge-graph candidates and their moderation.", no_args_is_help=True)
    app.add_typer(claim_app, name="claim")
    app.add_typer(node_app, name="node")
    app.add_typer(edge_app, name="edge")
    app.add_typer(why_app, name="why")
    app.add_typer(kg_app, name="kg")

    from engram.thoughtdb import claims, edges, kg_moderation, nodes, why

    # ---- claims
    @claim_app.command("list")
    def claim_list(
        user: User,
        status: Annotated[str | None, typer.Option(help="Only this status (active, superseded, ...).")] = None,
        claim_type: Annotated[str | None, typer.Option("--type", help="fact | preference | assumption | goal")] = None,
        include_private: Private = False,
        limit: Limit = 100,
        as_json: Json = False,
    ) -> None:
        """List claims, newest first."""
        rows = _run(user, lambda con: claims.list_claims(con, user, status, claim_type, include_private, limit), True)
        _out(rows, as_json, lambda rs: [
            f"{r['id']}  {r['claim_type']:10} {r['status']:12} {r['confidence']:.2f}  {_short(r['text'])}" for r in rs])

    @claim_app.command("show")
    def claim_show(
        claim_id: Annotated[str, typer.Argument(help="Claim (fact) id.")],
        user: User,
        no_follow: Annotated[bool, typer.Option("--no-follow", help="Do not follow same_as redirects.")] = False,
        include_private: Private = False,
        as_json: Json = False,
    ) -> None:
        """Show a claim with its sources and history (a duplicate shows its canonical claim)."""
        row = _run(user, lambda con: claims.show_claim(con, user, claim_id, include_private, not no_follow), True)

        def lines(r: dict[str, Any]) -> list[str]:
            out = [f"(redirected from {' -> '.join(r['redirected_from'])})"] if r["redirected_from"] else []
            out += _kv(r) + [f"{'source_refs':16} {', '.join(r['source_refs'])}"]
            out += [f"  {h['created_at']} {h['action']:11} {h['status_before']}->{h['status_after']} "
                    f"{h['run_id']} {h['reason'] or ''}" for h in r["history"]]
            return out
        _out(row, as_json, lines)

    @claim_app.command("supersede")
    def claim_supersede(
        claim_id: Annotated[str, typer.Argument(help="The claim being replaced.")],
        user: User,
        text: Annotated[str, typer.Option(help="Text of the new claim.")],
        claim_type: Annotated[str | None, typer.Option("--type", help="Claim type (default: the old one's).")] = None,
        confidence: Annotated[float | None, typer.Option(help="Confidence (default: the old one's).")] = None,
        source_ref: Refs = None,
        valid_from: Annotated[str | None, typer.Option(help="When the new claim starts to hold (ISO, UTC).")] = None,
        reason: Annotated[str, typer.Option(help="Why (recorded in fact_events).")] = "manual supersede",
        as_json: Json = False,
    ) -> None:
        """Replace a claim with a new one (the old is kept, closed and marked superseded)."""
        res = _run(user, lambda con: claims.supersede_claim(con, user, claim_id, text, claim_type, confidence,
                                                      source_ref, valid_from, reason))
        _out(res, as_json, lambda r: [f"{r['claim_id']} supersedes {r['superseded_id']} (edge {r['edge_id']})"])

    @claim_app.command("same-as")
    def claim_same_as(
        duplicate_id: Annotated[str, typer.Argument(help="The duplicate claim.")],
        canonical_id: Annotated[str, typer.Argument(help="The claim it duplicates.")],
        user: User,
        source_ref: Refs = None,
        reason: Annotated[str, typer.Option(help="Why (recorded in fact_events).")] = "manual same_as",
        as_json: Json = False,
    ) -> None:
        """Mark a claim as a duplicate of another; reads of the duplicate follow to the canonical one."""
        res = _run(user, lambda con: claims.same_as(con, user, duplicate_id, canonical_id, source_ref, reason))
        _out(res, as_json, lambda r: [f"{r['duplicate_id']} same_as {r['canonical_id']} (edge {r['edge_id']})"])

    @claim_app.command("retract")
    def claim_retract(
        claim_id: Annotated[str, typer.Argument(help="The claim to retract.")],
        user: User,
        reason: Annotated[str, typer.Option(help="Why (recorded in fact_events).")] = "manual retract",
        as_json: Json = False,
    ) -> None:
        """Retract a claim (kept for audit, no longer valid)."""
        res = _run(user, lambda con: claims.retract_claim(con, user, claim_id, reason))
        _out(res, as_json, lambda r: [f"retracted {r['claim_id']} (was {r['status_before']})"])

    # ---- nodes
    @node_app.command("create")
    def node_create(
        user: User,
        node_type: Annotated[str, typer.Option("--type", help="Decision | Action | Summary")],
        title: Annotated[str, typer.Option(help="Short title.")],
        source_ref: Refs = None,
        body: Annotated[str | None, typer.Option(help="Longer text.")] = None,
        valid_from: Annotated[str | None, typer.Option(help="ISO time (UTC).")] = None,
        valid_to: Annotated[str | None, typer.Option(help="ISO time (UTC).")] = None,
        visibility: Annotated[str, typer.Option(help="private | project | global")] = "project",
        scope: Annotated[str, typer.Option(help="project | global")] = "project",
        as_json: Json = False,
    ) -> None:
        """Create a node; --source-ref (episode ids) is required."""
        node_id = _run(user, lambda con: nodes.create_node(con, user, node_type, title, source_ref or [], body,
                                                     valid_from, valid_to, visibility, scope))
        _out({"node_id": node_id}, as_json, lambda r: [r["node_id"]])

    @node_app.command("list")
    def node_list(
        user: User,
        node_type: Annotated[str | None, typer.Option("--type", help="Decision | Action | Summary")] = None,
        status: Annotated[str | None, typer.Option(help="active | retracted")] = None,
        include_private: Private = False,
        limit: Limit = 100,
        as_json: Json = False,
    ) -> None:
        """List nodes, newest first."""
        rows = _run(user, lambda con: nodes.list_nodes(con, user, node_type, status, include_private, limit), True)
        _out(rows, as_json, lambda rs: [
            f"{r['id']}  {r['node_type']:9} {r['status']:10} {_short(r['title'])}" for r in rs])

    @node_app.command("show")
    def node_show(
        node_id: Annotated[str, typer.Argument(help="Node id.")],
        user: User,
        include_private: Private = False,
        as_json: Json = False,
    ) -> None:
        """Show one node."""
        row = _run(user, lambda con: nodes.get_node(con, user, node_id, include_private), True)
        _out(row, as_json, lambda r: _kv(r) + [f"{'source_refs':16} {', '.join(r['source_refs'])}"])

    @node_app.command("retract")
    def node_retract(
        node_id: Annotated[str, typer.Argument(help="Node id.")],
        user: User,
        as_json: Json = False,
    ) -> None:
        """Retract a node (kept for audit, validity closed now)."""
        res = _run(user, lambda con: nodes.retract_node(con, user, node_id))
        _out(res, as_json, lambda r: [f"retracted {r['node_id']} (was {r['status_before']})"])

    # ---- edges
    @edge_app.command("create")
    def edge_create(
        user: User,
        edge_type: Annotated[str, typer.Option("--type", help="depends_on | supports | contradicts | "
                                                              "derived_from | mentions")],
        from_id: Annotated[str, typer.Option("--from", help="Source record id.")],
        to_id: Annotated[str, typer.Option("--to", help="Target record id.")],
        source_ref: Refs = None,
        as_json: Json = False,
    ) -> None:
        """Create an edge between two existing records; --source-ref is required."""
        edge_id = _run(user, lambda con: edges.create_edge(con, user, edge_type, from_id, to_id, source_ref or []))
        _out({"edge_id": edge_id}, as_json, lambda r: [r["edge_id"]])

    @edge_app.command("list")
    def edge_list(
        user: User,
        edge_type: Annotated[str | None, typer.Option("--type", help="Only this edge type.")] = None,
        from_id: Annotated[str | None, typer.Option("--from", help="Only edges from this id.")] = None,
        to_id: Annotated[str | None, typer.Option("--to", help="Only edges to this id.")] = None,
        status: Annotated[str | None, typer.Option(help="Only this status.")] = None,
        limit: Limit = 100,
        as_json: Json = False,
    ) -> None:
        """List edges, newest first."""
        rows = _run(user, lambda con: edges.list_edges(con, user, edge_type, from_id, to_id, status, limit), True)
        _out(rows, as_json, lambda rs: [
            f"{r['id']}  {r['from_id']} -[{r['edge_type']}]-> {r['to_id']}  {r['status']}" for r in rs])

    @edge_app.command("show")
    def edge_show(
        edge_id: Annotated[str, typer.Argument(help="Edge id.")],
        user: User,
        as_json: Json = False,
    ) -> None:
        """Show one edge."""
        row = _run(user, lambda con: edges.get_edge(con, user, edge_id), True)
        _out(row, as_json, lambda r: _kv(r) + [f"{'source_refs':16} {', '.join(r['source_refs'])}"])

    # ---- why
    def _why(kind: str, record_id: str, user: str, as_of: str | None, depth: int, max_nodes: int,
             include_private: bool, save: bool, as_json: bool) -> None:
        from engram import llm as llms
        from engram.cli.app import settings_or_exit

        model = llms.from_settings(settings_or_exit())

        def go(con: Any) -> dict[str, Any]:
            result = why.trace(con, user, kind, record_id, as_of, depth, max_nodes,
                               include_private=include_private, llm=model)
            if save:
                result["saved_node_id"] = why.save_trace(con, user, result)
            return result

        res = _run(user, go, read_only=not save)
        _out(res, as_json, _why_lines)

    @why_app.command("claim")
    def why_claim(
        record_id: Annotated[str, typer.Argument(help="Claim id.")],
        user: User,
        as_of: Annotated[str | None, typer.Option(help="Evaluate validity at this time (ISO, UTC).")] = None,
        depth: Annotated[int, typer.Option(help="Levels to walk.")] = 5,
        max_nodes: Annotated[int, typer.Option(help="Records to visit at most.")] = 200,
        include_private: Private = False,
        save: Annotated[bool, typer.Option("--save", help="Store the result as a Summary node.")] = False,
        as_json: Json = False,
    ) -> None:
        """Why does this claim hold?"""
        _why("claim", record_id, user, as_of, depth, max_nodes, include_private, save, as_json)

    @why_app.command("node")
    def why_node(
        record_id: Annotated[str, typer.Argument(help="Node id.")],
        user: User,
        as_of: Annotated[str | None, typer.Option(help="Evaluate validity at this time (ISO, UTC).")] = None,
        depth: Annotated[int, typer.Option(help="Levels to walk.")] = 5,
        max_nodes: Annotated[int, typer.Option(help="Records to visit at most.")] = 200,
        include_private: Private = False,
        save: Annotated[bool, typer.Option("--save", help="Store the result as a Summary node.")] = False,
        as_json: Json = False,
    ) -> None:
        """Why does this node (Decision, Action, Summary) hold?"""
        _why("node", record_id, user, as_of, depth, max_nodes, include_private, save, as_json)

    @why_app.command("event")
    def why_event(
        record_id: Annotated[str, typer.Argument(help="Event (episode) id.")],
        user: User,
        as_of: Annotated[str | None, typer.Option(help="Evaluate validity at this time (ISO, UTC).")] = None,
        depth: Annotated[int, typer.Option(help="Levels to walk.")] = 5,
        max_nodes: Annotated[int, typer.Option(help="Records to visit at most.")] = 200,
        include_private: Private = False,
        save: Annotated[bool, typer.Option("--save", help="Store the result as a Summary node.")] = False,
        as_json: Json = False,
    ) -> None:
        """What led to this event?"""
        _why("event", record_id, user, as_of, depth, max_nodes, include_private, save, as_json)

    # ---- kg
    @kg_app.command("candidates")
    def kg_candidates(
        user: User,
        status: Annotated[str | None, typer.Option(help="pending | approved | rejected | all")] = "pending",
        limit: Limit = 100,
        as_json: Json = False,
    ) -> None:
        """List staged KG entity and edge candidates."""
        wanted = None if status == "all" else status
        res = _run(user, lambda con: kg_moderation.list_candidates(con, user, wanted, limit), True)
        _out(res, as_json, lambda r: (
            [f"{e['id']}  entity {e['entity_type'] or '-':12} {e['confidence']:.2f} {e['status']:8} {e['name']}"
             for e in r["entities"]]
            + [f"{e['id']}  edge   {e['confidence']:.2f} {e['status']:8} {e['src_name']} -[{e['relation']}]-> "
               f"{e['dst_name']}" for e in r["edges"]]))

    @kg_app.command("moderate")
    def kg_moderate(
        user: User,
        approve: Annotated[list[str] | None, typer.Option(help="Candidate ids to approve (comma-separated or repeated).")] = None,
        reject: Annotated[list[str] | None, typer.Option(help="Candidate ids to reject (comma-separated or repeated).")] = None,
        mark_removal: Annotated[bool | None, typer.Option(
            "--mark-removal/--no-mark-removal",
            help="Mark source thoughts with nothing pending for removal (default: ENGRAM_AUTO_MARK_REMOVAL).")] = None,
        as_json: Json = False,
    ) -> None:
        """Approve (promote to the KG, deduped by normalised name) or reject candidates; all or nothing."""
        from engram.cli.app import settings_or_exit

        mark = settings_or_exit().auto_mark_removal if mark_removal is None else mark_removal
        res = _run(user, lambda con: kg_moderation.moderate(con, user, _ids(approve), _ids(reject), mark))
        _out(res, as_json, lambda r: [
            f"approved {r['approved']}, rejected {r['rejected']}, unchanged {r['unchanged']}; entities created "
            f"{r['entities_created']}, merged {r['entities_merged']}; edges created {r['edges_created']}, "
            f"merged {r['edges_merged']}"])


def _why_lines(r: dict[str, Any]) -> list[str]:
    """A why-trace as text."""
    out = [f"why {r['kind']} {r['start_id']} as of {r['as_of']}"
           + (f" (redirected from {r['requested_id']})" if r["requested_id"] != r["start_id"] else "")
           + (f" [the start itself is {r['start_filtered']} at that time]" if r["start_filtered"] else "")]
    for n in r["nodes"]:
        cluster = f" [{n['cluster']}]" if n["cluster"] else ""
        out.append(f"{'  ' * n['level']}{n['id']} {n['kind']}/{n['subtype']} {n['status']}{cluster}: "
                   f"{_short(n['label'], 70)}")
    for c in r["clusters"]:
        out.append(f"{c['id']}: cycle of {', '.join(c['members'])}")
    out.append(f"sources: {', '.join(r['sources']) or '-'}")
    out.append(f"support set ({r['picked_by']}): {', '.join(r['support_set']) or '-'}"
               f"; {r['paths']} path(s), {r['uncovered_paths']} with no active claim")
    if r["filtered"]:
        out.append("filtered: " + ", ".join(f"{f['id']} ({f['reason']})" for f in r["filtered"]))
    if r["truncated"] or r["paths_truncated"]:
        out.append("truncated: raise --depth / --max-nodes to see more")
    if r.get("saved_node_id"):
        out.append(f"saved as Summary node {r['saved_node_id']}")
    return out
