"""`engram review`: list the queued LLM reviews and decide one by hand (same validated apply path)."""

from __future__ import annotations

from typing import Annotated

import typer

from engram.store.tenant import normalise_user_option
from engram.text.terminal import echo

review_app = typer.Typer(help="Queued contradiction and merge cases: list them, decide one by hand.",
                         no_args_is_help=True)


@review_app.command("list")
def list_cmd(
    user: Annotated[str | None, typer.Option(help="Only this tenant.", callback=normalise_user_option)] = None,
    status: Annotated[str, typer.Option(help="pending | failed | applied | all")] = "pending",
    kind: Annotated[str | None, typer.Option(help="contradiction | merge")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """List reviews (pending by default) with the facts they are about."""
    from engram.cli.app import emit, fail, settings_or_exit
    from engram.consolidate.resolve import list_reviews
    from engram.errors import EngramError
    from engram.store.sharding import stores_for

    s = settings_or_exit()
    try:  # the tenant's shard, or every shard's reviews, oldest first as each shard lists them
        rows = [r for shard in stores_for(s, user)
                for r in list_reviews(shard, user, None if status == "all" else status, kind, limit)]
        rows = sorted(rows, key=lambda r: (r["created_at"], r["id"]))[:limit]
    except EngramError as exc:
        fail(exc)
    if as_json:
        emit(rows, True)
        return
    if not rows:
        echo(f"no {status} reviews")
        if user:
            from engram.store.tenant_hint import unknown_tenant_hint

            hint = unknown_tenant_hint(s, user)
            if hint:
                echo(hint, err=True)
    for r in rows:
        echo(f"{r['id']}  {r['user_id']}  {r['kind']}  {r['status']}  attempts={r['attempts']}  {r['reason'] or ''}")
        if r["error"]:
            echo(f"    last error: {r['error']}")
        for label, f in zip("abcdefghijklmnopqrstuvwxyz", r.get("facts", []), strict=False):
            shown = "(missing)" if f.get("missing") else f"[{f['status']} {f['confidence']}] {f['text']}"
            echo(f"    {label if r['kind'] == 'contradiction' else '-'} {f['id']}: {shown}")


@review_app.command("decide")
def decide_cmd(
    review_id: Annotated[str, typer.Argument(metavar="ID", help="The review id (see `engram review list`).")],
    action: Annotated[str, typer.Argument(help="contradiction: keep_a | keep_b | keep_both | both_uncertain; "
                                               "merge: merge | keep_both | contradiction")],
    reason: Annotated[str, typer.Option(help="Why (kept in the audit trail).")] = "",
    winner: Annotated[str | None, typer.Option(help="merge: the fact id to keep.")] = None,
    conflicting: Annotated[str | None, typer.Option(help="merge -> contradiction: two fact ids, comma-separated.")] = None,
    user: Annotated[str | None, typer.Option(help="Tenant of the review (if the id is ambiguous).",
                                             callback=normalise_user_option)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Decide one review by hand; validated and applied like an LLM decision (decided_by 'human')."""
    from engram.cli.app import emit, fail, settings_or_exit
    from engram.consolidate.resolve import decide_review
    from engram.errors import EngramError, InvalidInput
    from engram.store.sharding import stores_for

    s = settings_or_exit()
    pair = [p.strip() for p in conflicting.split(",") if p.strip()] if conflicting else None
    shards = stores_for(s, user)
    for i, shard in enumerate(shards):
        try:
            out = decide_review(shard, review_id, action, reason, winner, pair, user)
            break
        except InvalidInput as exc:
            # without --user the review's shard is not known: a shard that lacks the id passes it on
            if i + 1 < len(shards) and str(exc).startswith("id: no review"):
                continue
            fail(exc)
        except EngramError as exc:
            fail(exc)
    if as_json:
        emit(out, True)
        return
    echo(f"applied {out['action']} to {out['kind']} review {out['id']} (user {out['user_id']}, run {out['run_id']})")


def register(app: typer.Typer) -> None:
    """Add `engram review ...` to the CLI."""
    app.add_typer(review_app, name="review")
