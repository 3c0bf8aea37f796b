"""The run report: a markdown summary of a consolidation run (no memory text)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

COUNT_KEYS = {
    "embed": ("episodes", "facts"),
    "extract": ("new_episodes", "statements", "clusters", "extraction_queued", "facts_created"),
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
        lines += ["| stage | result |", "|---|---|"]
        lines += [f"| {stage} | {_cell(stage, counts)} |" for stage, counts in stages.items()]
        lines.append("")
    return "\n".join(lines)


def short(text: Any, width: int = 80) -> str:
    """Text cut to `width` characters with an ellipsis, on one line."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _conf(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def change_rows(results: dict[str, Any], width: int = 80) -> list[dict[str, str]]:
    """The run's fact changes as table rows: tenant, fact, shortened text, what happened, and why."""
    rows = []
    for tenant, stages in results.items():
        for c in (stages.get("publish") or {}).get("changes", []) if isinstance(stages, dict) else []:
            status = (f"{c.get('status_before') or '-'} -> {c.get('status_after') or '-'}"
                      if c.get("status_before") != c.get("status_after") else (c.get("status_after") or "-"))
            rows.append({
                "tenant": tenant,
                "fact": c["fact_id"],
                "text": short(c.get("text"), width),
                "event": c["action"],
                "confidence": f"{_conf(c.get('confidence_before'))} -> {_conf(c.get('confidence_after'))}",
                "status": status,
                "reason": short(c.get("reason"), width),
            })
    return rows


def changes_markdown(results: dict[str, Any], limit: int = 50, width: int = 60) -> str:
    """The run's fact changes as a markdown table (the first `limit`), or '' when nothing changed."""
    rows = change_rows(results, width)
    if not rows:
        return ""
    cols = ("tenant", "fact", "text", "event", "confidence", "status", "reason")
    lines = ["## changes", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |" for r in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"\n{len(rows) - limit} more change(s): engram sql \"select * from fact_history where run_id = ...\"")
    return "\n".join(lines) + "\n"
