"""CLI commands of the nightly pipeline: consolidate, explain, revert-run, demo."""

from __future__ import annotations

from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer

from engram.store.tenant import normalise_user_option

SAMPLE_DATA = Path(resources.files("engram.data") / "sample_episodes.jsonl")  # shipped in the wheel
from engram.text.terminal import echo

DEMO_QUERIES = ("what does the user eat?", "when is the team standup?", "what does the user drink in the morning?",
                "does the user like spicy food?")


def run_nightly(user: str | None, as_of: datetime | None, dry_run: bool, stages: list[str] | None) -> dict[str, Any]:
    """Run the Prefect flow in-process (ephemeral mode when no server is configured)."""
    # The CLI is the one place in engram/ that reaches up into flows/: imported lazily so the
    # library itself never imports Prefect.
    import os

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # Prefect waits 20 s for its ephemeral server; on a busy 2-core machine starting it takes longer
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    from engram.cli.progress import stage_progress
    from engram.consolidate.runner import choose_stages
    from engram.flows.nightly import nightly_consolidation

    total = len(choose_stages(stages)) if user else None  # every tenant with work: not known up front
    with stage_progress("consolidating", total):
        return nightly_consolidation(user_id=user, as_of=as_of, dry_run=dry_run, stages=stages)


def snapshot_line(snapshot: dict[str, Any] | None) -> str:
    """One line on the read snapshot the run published (or why not)."""
    if not snapshot:
        return "read snapshot: not published"
    if "path" in snapshot:
        return f"read snapshot: {snapshot['snapshot_id']} (query it: engram sql \"select * from current_facts limit 10\")"
    return f"read snapshot: not published ({snapshot.get('skipped') or snapshot.get('failed')})"


def register(app: typer.Typer) -> None:
    """Add the pipeline commands."""
    from engram.cli.app import emit, fail, settings_or_exit
    from engram.errors import EngramError

    @app.command()
    def consolidate(
        user: Annotated[str | None, typer.Option(help="Only this tenant (default: every tenant with work).",
                                                 callback=normalise_user_option)] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Compute and report, write nothing.")] = False,
        as_of: Annotated[datetime | None, typer.Option(help="Logical time of the run (UTC).")] = None,
        stage: Annotated[list[str] | None, typer.Option(help="Run only these stages (repeatable).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Run the nightly consolidation flow now (Prefect, in-process).

        An inbox segment the run's fold cannot read is quarantined and every other tenant goes on; the
        command then exits 1 naming it."""
        from engram import clock
        from engram.consolidate.report import changes_markdown, run_report_markdown
        from engram.consolidate.runner import choose_stages, failed_tenants
        from engram.store.inbox_report import collect
        from engram.store.presence import require_store
        from engram.store.tenant_hint import unknown_tenant_hint

        s = settings_or_exit()
        collect()  # only this run's notices
        try:
            if as_of is not None:  # an as_of the run cannot compute with is one line, before anything runs
                as_of = clock.run_as_of(as_of)
            hint = unknown_tenant_hint(s, user) if user else None
            if hint:  # nothing to consolidate: say why instead of a report of zeros
                echo(hint, err=True)
                if as_json:
                    emit({"run_id": None, "tenants": {}, "skipped": hint}, True)
                return
            choose_stages(stage)  # an unknown stage is one line here, not a failed flow run
            result = run_nightly(user, as_of, dry_run, stage)
            require_store(s)  # removed during the run, after its last open: its results are gone with it
        except EngramError as exc:
            fail(exc)
        inbox = collect()  # what the run's folds set aside: named, and the night is not done
        if as_json:
            emit({**result, "inbox": inbox.counts()}, True)
        else:
            echo(run_report_markdown(result["run_id"], datetime.fromisoformat(result["as_of"]),
                                     result["dry_run"], result["tenants"]))
            changes = changes_markdown(result["tenants"], run_id=result["run_id"])
            if changes:
                echo(changes)
            echo(snapshot_line(result.get("snapshot")))
        for line in inbox.lines():
            echo(line, err=True)
        failed = sorted(failed_tenants(result["tenants"]))
        if inbox.failed and not failed:
            raise typer.Exit(1)
        if failed:  # the report says which stage; the exit status tells a scheduler the night is not done
            echo(f"error [tenant_failed]: {len(failed)} tenant(s) failed (their runs rows name the stage; "
                 "the next run retries)", err=True)
            raise typer.Exit(1)

    @app.command()
    def explain(
        fact_id: Annotated[str, typer.Argument(help="The fact to explain.")],
        user: Annotated[str, typer.Option(help="Tenant of the fact.", callback=normalise_user_option)],
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Print a fact's full history (every fact_event) and its sources."""
        from engram.query.explain import explain_fact, format_explanation
        from engram.store.tenant_hint import unknown_tenant_hint

        s = settings_or_exit()
        try:
            info = explain_fact(s, user, fact_id, read_only=True)
        except EngramError as exc:
            try:  # a store that cannot be opened fails the hint too: report the first error only
                hint = unknown_tenant_hint(s, user)
            except EngramError:
                hint = None
            if hint:
                echo(hint, err=True)
            fail(exc)
        emit(info if as_json else format_explanation(info), as_json)

    @app.command("revert-run")
    def revert_run(
        run_id: Annotated[str, typer.Argument(help="The consolidation run to undo.")],
        user: Annotated[str, typer.Option(help="Tenant.", callback=normalise_user_option)],
    ) -> None:
        """Undo every fact change a run made (audited as 'reverted' events)."""
        from engram import clock
        from engram.store import db, fact_ops
        from engram.store.sharding import for_tenant

        s = settings_or_exit()
        try:
            with db.open_store(for_tenant(s, user)) as con, db.transaction(con):
                n = fact_ops.revert_run(con, user, run_id, clock.now())
        except EngramError as exc:
            fail(exc)
        echo(f"reverted {n} change(s) of {run_id} for {user}")

    @app.command()
    def demo(
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    ) -> None:
        """Ingest the sample data, run the whole nightly pipeline once, print a report and searches."""
        from engram.demo import run_demo

        s = settings_or_exit()
        try:
            report = run_demo(s, SAMPLE_DATA, DEMO_QUERIES, run_nightly)
        except EngramError as exc:
            fail(exc)
        emit(report if as_json else report["lines"], as_json)
