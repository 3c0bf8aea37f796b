"""Batch mode's collection flow: apply the finished Gemini batch jobs without waiting for the next night."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from engram import clock
from engram.consolidate.report import batch_report_markdown
from engram.settings import load_settings
from engram.tasks import llm_batch as t


@flow(name="llm-batch-collection")
def llm_batch_collection(as_of: datetime | None = None, submit: bool = False) -> dict[str, Any]:
    """Poll the open batch jobs, apply what finished, re-queue what was lost; optionally submit what is pending."""
    settings = load_settings()
    as_of = clock.naive_utc_or_now(as_of)
    run_id = clock.run_id("collect", as_of, key=as_of.isoformat())
    result: dict[str, Any] = {"run_id": run_id, "collect": t.collect_llm_batches(settings, run_id, as_of)}
    if submit:
        result["submit"] = t.submit_llm_batch(settings, run_id, as_of)
    get_run_logger().info("llm batch collection %s: %s", run_id, result["collect"])
    create_markdown_artifact(key=f"llm-batches-{run_id.lower()}"[:100],
                             markdown=batch_report_markdown(run_id, result), description="batch jobs collected")
    return result


if __name__ == "__main__":
    llm_batch_collection()
