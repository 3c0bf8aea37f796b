"""CLI commands of the query module: search, retrieve, inner-voice, ask, context (all with --json)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from engram.store.tenant import normalise_user_option
from engram.text.terminal import echo, safe

User = Annotated[str, typer.Option("--user", help="Tenant (user_id).", callback=normalise_user_option)]
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
Private = Annotated[bool, typer.Option("--include-private", help="Also return private rows.")]
Tags = Annotated[list[str] | None, typer.Option("--tag", help="Only rows with any of these tags (repeatable).")]
NoTags = Annotated[list[str] | None, typer.Option("--exclude-tag", help="Drop rows with these tags (repeatable).")]


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    from engram.cli.app import fail, settings_or_exit
    from engram.errors import EngramError

    settings = settings_or_exit()
    try:  # the query functions route to the tenant's shard themselves (engram.store.sharding.for_tenant)
        return fn(*args, settings=settings, **kwargs)
    except EngramError as exc:
        fail(exc)


def _tenant_hint(user: str) -> None:
    """After an empty answer: say so when the tenant has no episodes at all, and name the tenants there are."""
    from engram.cli.app import fail, settings_or_exit
    from engram.errors import EngramError
    from engram.store.tenant_hint import unknown_tenant_hint

    try:
        hint = unknown_tenant_hint(settings_or_exit(), user)
    except EngramError as exc:
        fail(exc)
    if hint:
        echo(hint, err=True)


def search_cmd(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: User,
    type_: Annotated[str, typer.Option("--type", help="facts | episodes | both")] = "both",
    limit: Annotated[int | None, typer.Option("--limit", "-k", help="Cap on the count (default: as many as fit).")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", help="Token budget of what is printed (default ENGRAM_MAX_TOKENS, 1500).")] = None,
    as_of: Annotated[datetime | None, typer.Option("--as-of", help="Answer from facts valid then (UTC).")] = None,
    method: Annotated[str, typer.Option("--method", help="hybrid | vector | lexical")] = "hybrid",
    passive: Annotated[bool, typer.Option("--passive", help="Passive thresholds (confidence at least 0.5).")] = False,
    include_private: Private = False,
    include_sources: Annotated[bool, typer.Option("--sources", help="Show the sources' text too.")] = False,
    tag: Tags = None,
    exclude_tag: NoTags = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show what each relevance is made of.")] = False,
    as_json: Json = False,
) -> None:
    """Active search: the memories worth most per token that fit the budget, current first, ranked."""
    from engram.cli.app import settings_or_exit
    from engram.query.search import search_memory

    budget = settings_or_exit().max_tokens if max_tokens is None else max_tokens
    packed = _call(search_memory, query, type_, limit, user, as_of, method=method,
                   mode="passive" if passive else "active", include_private=include_private,
                   include_tags=tag, exclude_tags=exclude_tag, max_tokens=budget, include_sources=include_sources,
                   explain=explain, render="json" if as_json else "text")
    if as_json:
        typer.echo(packed.payload)  # the reply an MCP client gets; json.dumps escaped what needs it
        return
    echo(packed.payload)  # lines already escaped as a terminal shows them: the budget counted these very lines
    if not packed:
        _tenant_hint(user)


def retrieve_cmd(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: User,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k", help="Snippets (default ENGRAM_RETRIEVE_TOP_K).")] = None,
    floor: Annotated[float | None, typer.Option("--floor", help="Similarity floor (default: adaptive).")] = None,
    mix: Annotated[float | None, typer.Option("--mix", help="Share of slots for the KG (default 0.6).")] = None,
    include_private: Private = False,
    tag: Tags = None,
    exclude_tag: NoTags = None,
    as_json: Json = False,
) -> None:
    """Retrieve-only snippets with provenance and diagnostics (needs ENGRAM_ENABLE_INNER_VOICE=true)."""
    from engram.cli.app import emit
    from engram.query.retrieve import retrieve

    out = _call(retrieve, query, top_k, floor, mix, include_private, tag, exclude_tag, user_id=user)
    if as_json:
        emit(out, True)
        return
    d = out["diagnostics"]
    echo(f"{d['k_ret']}/{d['k_req']} snippet(s), floor {d['floor_used']}, {d['latency_ms']} ms"
               + (f", {d['reason']}" if d["reason"] else ""))
    for s in out["snippets"]:
        echo(f"{s['score']:.3f}  {s['source_type']:14} {s['trust_tier']:5} {s['id']}  {safe(s['text'][:160])}")


def inner_voice_cmd(
    content: Annotated[str, typer.Argument(help="The thought or question to reflect on.")],
    user: User,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k")] = None,
    sim_thresh: Annotated[float | None, typer.Option("--sim-thresh", help="Minimum cosine (default 0.5).")] = None,
    stage_kg: Annotated[bool, typer.Option("--stage-kg", help="Stage KG entity/edge candidates.")] = False,
    confidence_min: Annotated[float, typer.Option("--confidence-min")] = 0.6,
    max_nodes: Annotated[int, typer.Option("--max-nodes")] = 30,
    max_edges: Annotated[int, typer.Option("--max-edges")] = 60,
    no_save: Annotated[bool, typer.Option("--no-save", help="Do not save the answer as a summary thought.")] = False,
    auto_mark_removal: Annotated[bool | None, typer.Option("--auto-mark-removal/--no-auto-mark-removal")] = None,
    as_json: Json = False,
) -> None:
    """RAG over your thoughts: an extractive answer, saved as a summary thought (needs the inner-voice flag)."""
    from engram.cli.app import emit
    from engram.query.inner_voice import inner_voice

    out = _call(inner_voice, content, top_k, sim_thresh, stage_kg, confidence_min, max_nodes, max_edges,
                not no_save, auto_mark_removal, user_id=user)
    if as_json:
        emit(out, True)
        return
    echo(out["synthesized_answer"] or "(no thought above the threshold)")
    for s in out["sources"]:
        echo(f"  {s['similarity']:.3f} {s['thought_id']}")
    if out["saved_thought_id"]:
        echo(f"saved as {out['saved_thought_id']}")
    if stage_kg:
        st = out["staged"]
        echo(f"staged {st['pending_entities']} entity and {st['pending_relationships']} edge candidate(s)")
    if out["marked_for_removal"]:
        echo(f"marked for removal: {', '.join(out['marked_for_removal'])}")


def ask_cmd(
    query: Annotated[str, typer.Argument(help="The question.")],
    user: User,
    session: Annotated[str | None, typer.Option("--session", help="Continue this session.")] = None,
    as_json: Json = False,
) -> None:
    """A grounded answer citing >= 2 facts, or a refusal with the reason (needs ENGRAM_LLM)."""
    from engram.cli.app import emit
    from engram.query.ask import ask

    out = _call(ask, query, session, user_id=user)
    if as_json:
        emit(out, True)
        return
    if out["refused"]:
        echo(f"refused: {out['reason']}")
    else:
        echo(out["answer"])
        for s in out["sources"]:
            echo(f"  [{s['label']}] {s['id']}: \"{s['quote']}\"")
    echo(f"session {out['session_id']}")


def context_cmd(
    user: User,
    message: Annotated[list[str] | None, typer.Option("--message", "-m", help="Recent message, oldest first.")] = None,
    tool_result: Annotated[list[str] | None, typer.Option("--tool-result", help="Tool output (privileged).")] = None,
    streamed: Annotated[list[str] | None, typer.Option("--streamed", help="Streamed item (opportunistic).")] = None,
    system: Annotated[list[str] | None, typer.Option("--system", help="System text (fills the rest; memories come after it, quoted as data).")] = None,
    budget: Annotated[int, typer.Option("--budget", help="Token budget (WordPiece).")] = 1500,
    no_memories: Annotated[bool, typer.Option("--no-memories", help="Do not prefetch memories.")] = False,
    as_json: Json = False,
) -> None:
    """Passive mode: prefetch memories for the recent messages and build a token-budgeted context."""
    from engram.cli.app import emit, fail
    from engram.errors import EngramError
    from engram.query.passive import build_context, memory_records, prefetch_context

    memories: list[dict] = []
    if message and not no_memories:
        pre = _call(prefetch_context, message, user)
        memories = memory_records(pre.hits)
    try:
        out = build_context(message, tool_result, streamed, system, budget, memories=memories)
    except EngramError as exc:
        fail(exc)
    if as_json:
        emit(out, True)
        return
    echo(out["text"])
    echo(f"-- {out['total_tokens']}/{out['budget']} tokens; dropped {out['dropped']}", err=True)


def register(app: typer.Typer) -> None:
    """Add the query commands to the CLI."""
    app.command("search")(search_cmd)
    app.command("retrieve")(retrieve_cmd)
    app.command("inner-voice")(inner_voice_cmd)
    app.command("ask")(ask_cmd)
    app.command("context")(context_cmd)
