"""Batch mode's extraction: clusters become cases at the extract stage, facts arrive when the job is collected."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram import llm as llms
from engram.consolidate.batch import (
    EXTRACTION_CLUSTER_MAX_CHARS,
    collect_batches,
    submit_batch,
)
from engram.consolidate.llm_extract import ClusterInput, build_requests, trimmed
from engram.consolidate.runner import Tools, run_tenant
from engram.embed.models import from_settings
from engram.llm.fake import FakeBatch
from engram.settings import Settings, load_settings
from engram.store import db
from engram.store.ingest import add_episodes

T0 = datetime(2026, 10, 1, 8)
STAGES = ("embed", "extract")
STATEMENTS = ["{n} drinks black coffee every morning", "{n} has a black coffee each morning",
              "Every morning {n} drinks coffee, black", "{n} drinks black coffee in the morning",
              "{n} lives in Berlin", "{n} has lived in Berlin for years", "{n}'s home is in Berlin",
              "{n} lives in Berlin now", "{n} went hiking at the lake yesterday"]


def seed(s: Settings) -> None:
    add_episodes([{"id": f"{u}-{i}", "user_id": u, "role": "user", "content": t.format(n=u.capitalize()) + ".",
                   "created_at": T0 + timedelta(minutes=i), "kind": "turn"}
                  for u in ("alice", "bob") for i, t in enumerate(STATEMENTS)], s)


def q(s: Settings, sql: str) -> list[tuple]:
    with db.open_store(s) as con:
        return con.execute(sql).fetchall()


def test_trimmed_keeps_members_up_to_the_budget() -> None:
    eps = [(f"e{i}", "user", "x" * 500, T0) for i in range(6)]
    assert [e[0] for e in trimmed(eps, 1200)] == ["e0", "e1"]
    assert [len(e[2]) for e in trimmed([("e0", None, "y" * 5000, T0)], 1200)] == [1200]  # the first, cut
    assert trimmed(eps, None) == eps
    (request,) = build_requests([ClusterInput("k", eps)], 200_000, EXTRACTION_CLUSTER_MAX_CHARS)
    assert request.prompt.count("x" * 500) == 2 and list(request.episode_alias["k"]) == ["e1", "e2"]


def test_clusters_wait_for_the_job_then_become_facts_once(settings: Settings) -> None:
    s = load_settings(llm="fake", llm_mode="batch")
    seed(s)
    day1, day2 = T0 + timedelta(days=1), T0 + timedelta(days=2)
    for user in ("alice", "bob"):
        tools = Tools(from_settings(s), llms.from_settings(s))
        counts = run_tenant(s, user, "run-1", day1, STAGES, tools)["extract"].counts
        assert counts["extraction_queued"] == counts["clusters"] >= 1
    assert q(s, "select count(*) from facts where run_id = 'run-1' and text like '%coffee%'") == [(0,)]
    queued = q(s, "select user_id, count(*) from llm_reviews where kind = 'extraction' group by 1 order by 1")
    batch = llms.batch_from_settings(s)
    assert isinstance(batch, FakeBatch)
    sent = submit_batch(s, batch, "run-1", day1)
    assert sent["cases"] == sum(n for _, n in queued) and sent["items"] == 2  # one request per tenant
    for kind, prompt in batch.calls:  # never two tenants in one prompt
        assert kind == "ExtractionReply" and ("Alice" in prompt) != ("Bob" in prompt)
    # another process collects (the fake keeps its jobs next to the store)
    got = collect_batches(s, llms.batch_from_settings(s), "run-2", day2)
    assert got["cases_applied"] == sent["cases"] and got["facts_created"] >= 4
    made = q(s, "select f.user_id, count(*) from facts as f join fact_events as e on e.user_id = f.user_id"
                " and e.fact_id = f.id where e.action = 'created' and e.run_id = 'run-2'"
                " and e.reason like 'llm extraction%batch%' group by 1 order by 1")
    assert [u for u, _ in made] == ["alice", "bob"]
    assert q(s, "select count(*) from fact_sources where run_id = 'run-2' and relation = 'extracted_from'")[0][0] >= 4
    assert q(s, "select count(*) from facts as f join fact_sources as x on x.fact_id = f.id"
                " where x.user_id <> f.user_id") == [(0,)]
    # the next run sends none of these episodes again
    for user in ("alice", "bob"):
        run_tenant(s, user, "run-2", day2, STAGES, Tools(from_settings(s), llms.from_settings(s)))
    assert submit_batch(s, batch, "run-2", day2)["jobs_submitted"] == 0
    assert collect_batches(s, batch, "run-3", day2)["jobs_open"] == 0
