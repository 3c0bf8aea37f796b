"""The run report: a markdown summary of a consolidation run, and the table of the facts it changed.

The report says per tenant what changed in words (counts; updates with their old and new text, a private
fact shown as '(private)') and the command that shows more. None of it goes to the logs.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime
from typing import Any

COUNT_KEYS = {
    "embed": ("episodes", "facts"),
    "extract": ("new_episodes", "statements", "statements_not_worth_keeping", "clusters", "extraction_queued",
                "facts_created"),
    # against: episodes contradicting a fact (fact_sources 'contradicts'); contradictions: fact pairs
    # queued for review; penalised: facts halved. `engram stats` shows the same three under these names.
    "confidence": ("reinforced", "supports", "against", "contradictions", "penalised", "superseded"),
    "merge": ("candidate_pairs", "merges", "facts_merged", "queued"),
    "resolve": ("requests", "decided", "applied", "failed", "input_tokens", "output_tokens", "cost_usd", "mode"),
    "deprecate": ("deprecated",),
    "archive": (),
    "publish": ("facts_embedded",),
}


def _cell(stage: str, counts: Any) -> str:
    if not isinstance(counts, dict):
        return str(counts)
    if counts.get("skipped") is True:
        return "already done"
    keys = COUNT_KEYS.get(stage) or tuple(k for k, v in counts.items() if isinstance(v, (int, float)))
    parts = [f"{k} {counts[k]}" for k in keys if k in counts]
    if "seconds" in counts:
        parts.append(f"{counts['seconds']} s")
    return ", ".join(parts) or "-"


BATCH_KEYS = {
    "collect": ("jobs_open", "jobs_waiting", "jobs_collected", "jobs_lost", "items_applied", "items_failed",
                "items_requeued", "cases_applied", "cases_failed", "cases_requeued", "facts_created",
                "input_tokens", "output_tokens", "cost_usd"),
    "submit": ("jobs_submitted", "job_name", "tenants", "items", "cases", "estimated_tokens", "stale",
               "skipped_budget", "error"),
}


def batch_report_markdown(run_id: str, batch: dict[str, Any]) -> str:
    """The batch-mode section: jobs collected and submitted, items failed, cost at batch prices."""
    lines = [f"## LLM batch jobs (`{run_id}`)", "", "| step | result |", "|---|---|"]
    for step, keys in BATCH_KEYS.items():
        counts = batch.get(step)
        if isinstance(counts, dict):
            parts = [f"{k} {counts[k]}" for k in keys if counts.get(k) is not None]
            lines.append(f"| {step} | {', '.join(parts) or '-'} |")
    return "\n".join(lines) + "\n"


def run_report_markdown(run_id: str, as_of: datetime, dry_run: bool, results: dict[str, Any],
                        batch: dict[str, Any] | None = None) -> str:
    """Markdown with one table per tenant: stage, counts, time; and the batch jobs in batch mode."""
    lines = [f"# Nightly consolidation `{run_id}`", "", f"as_of {as_of.isoformat()}"
             + (" (dry run: nothing written)" if dry_run else ""), ""]
    if batch:
        lines.append(batch_report_markdown(run_id, batch))
    if not results:
        lines.append("No tenant had work.")
    for tenant, stages in results.items():
        lines += [f"## tenant `{tenant}`", ""]
        if "skipped" in stages and isinstance(stages["skipped"], str):
            lines += [f"skipped: {stages['skipped']}", ""]
            continue
        if "failed" in stages and isinstance(stages["failed"], str):
            lines += [f"failed (see its runs rows; the next run retries): {stages['failed']}", ""]
            continue
        lines += what_changed(tenant, stages, run_id, dry_run)
        lines += ["| stage | result |", "|---|---|"]
        lines += [f"| {stage} | {_cell(stage, counts)} |" for stage, counts in stages.items()]
        lines.append("")
    return "\n".join(lines)


UPDATES_SHOWN = 10  # updates listed with their text per tenant; the rest are counted


def history_command(run_id: str, user_id: str | None = None) -> str:
    """The command that lists every fact change of the run (of one tenant), ready to paste in a shell."""
    tenant = "" if user_id is None else f" and user_id = {_sql_text(user_id)}"
    query = f"select * from fact_history where run_id = {_sql_text(run_id)}{tenant} order by user_id, fact_id, seq"
    return "engram sql " + '"' + re.sub(r'([\\"$`])', r"\\\1", query) + '"'


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def what_changed(tenant: str, stages: dict[str, Any], run_id: str, dry_run: bool = False) -> list[str]:
    """What the night did to a tenant's memory, in words, with the commands that show more."""
    changes = [c for c in ((stages.get("publish") or {}).get("changes") or []) if isinstance(c, dict)]
    by_action: dict[str, list[dict[str, Any]]] = {}
    for c in changes:
        by_action.setdefault(c.get("action") or "", []).append(c)
    queued = {kind: int((stages.get(stage) or {}).get(key) or 0) if isinstance(stages.get(stage), dict) else 0
              for kind, stage, key in (("contradiction", "confidence", "contradictions"), ("merge", "merge", "queued"))}
    failed = [f"{stage}: {counts['failed']}" for stage, counts in stages.items()
              if isinstance(counts, dict) and isinstance(counts.get("failed"), str)]
    llm_failed = int((stages.get("resolve") or {}).get("failed") or 0) if isinstance(stages.get("resolve"), dict) else 0
    parts = [_plural(len(by_action.get(a, [])), one, many) for a, one, many in (
        ("created", "new fact", None), ("superseded", "update", None), ("merged", "merge event", None),
        ("contradicted", "fact contradicted", "facts contradicted"), ("deprecated", "fact deprecated", "facts deprecated"),
        ("archived", "fact archived", "facts archived")) if by_action.get(a)]
    parts += [_plural(n, f"{kind} queued for review", f"{kind}s queued for review") for kind, n in queued.items() if n]
    if llm_failed:
        parts.append(_plural(llm_failed, "review decision failed", "review decisions failed"))
    if failed:
        parts.append(_plural(len(failed), "stage failed", "stages failed"))
    verb = "would change" if dry_run else "changed"
    lines = [f"What {verb}: " + ("; ".join(parts) if parts else "nothing") + "."]
    updates = by_action.get("superseded", [])
    for c in updates[:UPDATES_SHOWN]:
        lines.append(f"- updated: \"{short(c.get('text'))}\" -> \"{short(c.get('related_text')) or c.get('related_fact_id') or '?'}\"")
    if len(updates) > UPDATES_SHOWN:
        lines.append(f"- ... and {len(updates) - UPDATES_SHOWN} more update(s)")
    lines += [f"- failed: {f}" for f in failed]
    if any(queued.values()):
        lines.append(f"- decide the queued reviews: engram review list --user {shlex.quote(tenant)}")
    if changes:
        lines.append(f"- every change: {history_command(run_id, tenant)}")
        lines.append(f"- one fact's story: engram explain FACT_ID --user {shlex.quote(tenant)}")
    return [*lines, ""]


def short(text: Any, width: int = 80) -> str:
    """Text cut to `width` characters with an ellipsis, on one line."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _conf(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _before_after(before: str | None, after: str | None) -> str:
    """'after' when nothing was before (or nothing changed), else 'before -> after' (never a leading '-')."""
    if before is None or before == after:
        return after or ""
    return f"{before} -> {after or 'none'}"


def change_rows(results: dict[str, Any], width: int = 80) -> list[dict[str, str]]:
    """The run's fact changes as table rows: tenant, fact, shortened text, what happened, and why."""
    rows = []
    for tenant, stages in results.items():
        for c in (stages.get("publish") or {}).get("changes", []) if isinstance(stages, dict) else []:
            before, after = c.get("confidence_before"), c.get("confidence_after")
            rows.append({
                "event": c["action"],
                "text": short(c.get("text"), width),
                "confidence": _before_after(None if before is None else _conf(before),
                                            None if after is None else _conf(after)),
                "status": _before_after(c.get("status_before"), c.get("status_after")),
                "reason": short(c.get("reason"), width),
                "tenant": tenant,
                "fact": c["fact_id"],
            })
    return rows


ARTIFACT_ROWS = 200  # a night's table artifact shows this many changes, then a row saying how to see the rest


def capped_rows(rows: list[dict[str, str]], run_id: str, limit: int = ARTIFACT_ROWS) -> list[dict[str, str]]:
    """The first `limit` rows, then one row counting the rest and naming the command that lists them all."""
    if len(rows) <= limit:
        return rows
    more = {k: "" for k in rows[0]} | {"event": f"+{len(rows) - limit} more",
                                       "text": f"{len(rows) - limit} more change(s): {history_command(run_id)}"}
    return [*rows[:limit], more]


def changes_markdown(results: dict[str, Any], limit: int = 50, width: int = 60, run_id: str | None = None) -> str:
    """The run's fact changes as a markdown table (the first `limit`), or '' when nothing changed."""
    rows = change_rows(results, width)
    if not rows:
        return ""
    cols = tuple(rows[0])
    lines = ["## changes", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |" for r in rows[:limit]]
    if len(rows) > limit:
        command = history_command(run_id) if run_id else "engram sql \"select * from fact_history where run_id = 'RUN_ID'\""
        lines.append(f"\n{len(rows) - limit} more change(s): {command}")
    return "\n".join(lines) + "\n"
