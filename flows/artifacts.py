"""The artifacts a consolidation run publishes on its Prefect flow run page (nightly and sharded)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from engram.consolidate.report import capped_rows, change_rows, run_report_markdown


def publish_run_artifacts(run_id: str, as_of: datetime, dry_run: bool, results: dict[str, Any],
                          batch: dict[str, Any] | None = None) -> None:
    """The run report (markdown, with the batch jobs in batch mode) and the table of changed facts (capped)."""
    key = run_id.lower().replace("_", "-")
    create_markdown_artifact(
        key=f"report-{key}"[:100],
        markdown=run_report_markdown(run_id, as_of, dry_run, results, batch),
        description=f"nightly consolidation {run_id}",
    )
    # fact text shortened, with the reason: the UI alone tells what the night did. Capped: a table of
    # thousands of rows takes the UI tens of seconds to render; the last row names the command for the rest.
    rows = capped_rows(change_rows(results), run_id)
    if rows:
        create_table_artifact(key=f"changes-{key}"[:100], table=rows, description="facts changed by this run")
