"""The run report: a markdown summary of a consolidation run (no memory text)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

COUNT_KEYS = {
    "embed": ("episodes", "facts"),
    "extract": ("new_episodes", "statements", "clusters", "facts_created"),
    "confidence": ("reinforced", "supports", "contradictions", "penalised", "superseded"),
    "merge": ("candidate_pairs", "merges", "facts_merged", "queued"),
    "resolve": ("requests", "decided", "applied", "failed", "input_tokens", "output_tokens", "cost_usd"),
    "deprecate": ("deprecated",),
    "archive": (),
    "publish": ("facts_embedded",),
}


def utc_naive(moment: datetime) -> datetime:
    """A timestamp in UTC without tzinfo (the store's convention); naive input is taken as UTC."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


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


def run_report_markdown(run_id: str, as_of: datetime, dry_run: bool, results: dict[str, Any]) -> str:
    """Markdown with one table per tenant: stage, counts, time."""
    lines = [f"# Nightly consolidation `{run_id}`", "", f"as_of {as_of.isoformat()}"
             + (" (dry run: nothing written)" if dry_run else ""), ""]
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
