"""The nightly stages without Prefect, on the seeded scenario: exact rows after one run and a re-run."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engram.consolidate.context import StageContext
from engram.consolidate.runner import (
    Tools,
    consolidate_tenants,
    run_stage,
    tenants_with_work,
)
from engram.embed.models import from_settings
from engram.store import db
from tests.consolidation_scenario import (
    AS_OF,
    EXPECTED_EVENTS,
    OTHER,
    USER,
    expected,
    seed,
)


def run_all(settings, run_id: str, as_of=AS_OF) -> dict:
    ctx = StageContext(settings, USER, run_id, as_of)
    tools = Tools(from_settings(settings))
    return {stage: run_stage(ctx, stage, tools).summary()
            for stage in ("embed", "extract", "confidence", "merge", "digest", "resolve", "deprecate")}


def fact_state(con) -> dict[str, tuple[float, str, str | None]]:
    rows = con.execute("select id, text, confidence, status, merged_into_id from facts where user_id = $u",
                       {"u": USER}).fetchall()
    return {fid: (text, conf, status, merged) for fid, text, conf, status, merged in rows}


def key_of(fid: str, text: str) -> str:
    for key in expected():
        if fid == key or text.startswith(key):
            return key
    raise AssertionError(f"unexpected fact {fid}: {text}")


def snapshot(con) -> dict[str, list]:
    return {
        table: con.execute(f"select * exclude (embedding) from {table} order by all").fetchall()  # noqa: S608
        if table in ("facts", "episodes") else con.execute(f"select * from {table} order by all").fetchall()  # noqa: S608
        for table in ("facts", "fact_sources", "fact_events", "llm_reviews", "episodes")
    }


def assert_expected_facts(con) -> dict[str, tuple[float, str, str | None]]:
    """Every fact has the confidence and status the scenario computes; returns the fact state."""
    state = fact_state(con)
    want = expected()
    assert len(state) == len(want)
    for fid, (text, conf, status, _) in state.items():
        exp_conf, exp_status = want[key_of(fid, text)]
        assert conf == pytest.approx(exp_conf, abs=1e-6), text
        assert status == exp_status, text
    return state


def test_one_run_gives_exact_confidences_statuses_and_events(settings) -> None:
    seed(settings)
    counts = run_all(settings, "run-a")
    assert counts["extract"]["facts_created"] == 3
    assert counts["merge"]["merges"] == 1
    with db.open_store(settings) as con:
        state = assert_expected_facts(con)
        new_alice = next(f for f, v in state.items() if v[0].startswith("alice works"))
        assert state[new_alice][3] == "f_alice"
        events = con.execute("select fact_id, list(action order by action) from fact_events"
                             " where run_id = 'run-a' group by fact_id").fetchall()
        by_key = {key_of(fid, state[fid][0]): actions for fid, actions in events}
        assert by_key == EXPECTED_EVENTS
        reviews = con.execute("select kind, status, subject_ids from llm_reviews").fetchall()
        never_id = next(f for f, v in state.items() if v[0].startswith("Bob never"))
        assert reviews == [("contradiction", "pending", sorted(["f_coffee", never_id]))]
        # lineage: the winner carries the loser's sources; the noise episode supports both Alices
        sources = {r[0] for r in con.execute("select episode_id from fact_sources where fact_id = 'f_alice'").fetchall()}
        assert sources == {"seed-f_alice", "new-0", "new-1", "new-2", "new-3"}
        against = con.execute("select count(*) from fact_sources where fact_id = 'f_coffee'"
                              " and relation = 'contradicts'").fetchall()[0][0]
        assert against == 3
        # the other tenant is untouched
        assert con.execute("select count(*) from facts where user_id = $u", {"u": OTHER}).fetchall()[0][0] == 0


@pytest.mark.slow
def test_rerun_same_as_of_and_next_run_change_nothing(settings) -> None:
    seed(settings)
    run_all(settings, "run-a")
    with db.open_store(settings) as con:
        before = snapshot(con)
    again = run_all(settings, "run-a")
    assert all(c.get("skipped") for name, c in again.items() if name != "embed")
    later = run_all(settings, "run-b", as_of=AS_OF + timedelta(minutes=5))
    assert later["extract"]["facts_created"] == 0 and later["merge"]["merges"] == 0
    with db.open_store(settings) as con:
        after = snapshot(con)
    assert after["facts"] == before["facts"]
    assert after["fact_events"] == before["fact_events"]
    assert after["fact_sources"] == before["fact_sources"]
    assert after["llm_reviews"] == before["llm_reviews"]


def test_dry_run_writes_nothing_and_reports_what_the_real_run_does(settings) -> None:
    seed(settings)
    with db.open_store(settings) as con:
        before = snapshot(con)
    preview = consolidate_tenants(settings, "run-1", AS_OF, dry_run=True)
    with db.open_store(settings) as con:
        assert snapshot(con) == before
        assert con.execute("select count(*) from runs").fetchall() == [(0,)]
    real = consolidate_tenants(settings, "run-1", AS_OF)
    assert preview.keys() == real.keys() == {USER, OTHER}

    def counts(results: dict) -> dict:
        return {t: {s: {k: v for k, v in c.items() if k not in ("seconds", "indexes")} for s, c in stages.items()}
                for t, stages in results.items()}

    assert counts(preview) == counts(real)
    assert real[USER]["extract"]["facts_created"] > 0 and real[USER]["merge"]["merges"] == 1
    assert real[USER]["confidence"]["contradictions"] == 1 and real[USER]["deprecate"]["deprecated"] >= 1


def test_llm_extraction_cites_cluster_episodes_and_records_usage(settings) -> None:
    from engram import llm as llms

    seed(settings)
    fake = llms.from_settings(settings.model_copy(update={"llm": "fake"}))
    ctx = StageContext(settings, USER, "run-llm", AS_OF)
    tools = Tools(from_settings(settings), fake)
    run_stage(ctx, "embed", tools)
    counts = run_stage(ctx, "extract", tools).counts
    assert counts["llm"]["requests"] == 1  # every cluster of the night in one batched request
    assert counts["facts_created"] >= 3
    with db.open_store(settings) as con:
        rows = con.execute(
            "select f.id, count(s.episode_id), min(e.consolidated_run_id) from facts as f"
            " join fact_sources as s on s.user_id = f.user_id and s.fact_id = f.id"
            " join episodes as e on e.user_id = s.user_id and e.id = s.episode_id"
            " where f.run_id = 'run-llm' group by f.id").fetchall()
        assert rows and all(n >= 1 and run == "run-llm" for _, n, run in rows)
        usage = con.execute("select llm_calls, input_tokens > 0, status from runs"
                            " where run_id = 'run-llm' and stage = 'extract'").fetchall()
        assert usage == [(1, True, "completed")]


@pytest.mark.slow
def test_tenants_with_work_include_archive_due_and_skip_idle(settings) -> None:
    seed(settings)
    run_all(settings, "run-a")
    later = AS_OF + timedelta(days=1)
    # u1's contradiction review is still pending: that is work for an LLM, none without one
    assert tenants_with_work(settings.model_copy(update={"llm": "fake"}), later) == ["u1", "u2"]
    assert tenants_with_work(settings, later) == ["u2"]
    with db.open_store(settings) as con:
        con.execute("update llm_reviews set status = 'applied'")
    # the review decided, the side it halved below deprecate_below is due (a pending review had kept it)
    assert tenants_with_work(settings, later) == ["u1", "u2"]
    with db.open_store(settings) as con:
        con.execute("update facts set status = 'deprecated' where user_id = 'u1' and text like 'Bob never%'")
    # u2's episode was never consolidated; u1 has nothing new a day later
    assert tenants_with_work(settings, later) == ["u2"]
    # past retention, u1's merged and deprecated facts are due for the archive: u1 has work again
    due = AS_OF + timedelta(days=settings.retention_days + 1)
    assert "u1" in tenants_with_work(settings, due)


@pytest.mark.slow
def test_pair_rules_in_worker_processes_give_the_same_night(settings, monkeypatch) -> None:
    from engram.consolidate import rule_pool

    monkeypatch.setattr(rule_pool, "PARALLEL_MIN_PAIRS", 1)  # the scenario's few pairs go to workers
    batches: list[tuple[str, int]] = []
    in_worker = rule_pool._in_worker
    monkeypatch.setattr(rule_pool, "_in_worker", lambda rule, batch, batched: batches.append(
        (rule.__name__, len(batch))) or in_worker(rule, batch, batched))
    settings = settings.model_copy(update={"rule_workers": 2})
    seed(settings)
    counts = run_all(settings, "run-a")
    assert {name for name, n in batches if n >= 1} == {"valence_conflict", "contradiction", "same_statements"}
    assert counts["merge"]["merges"] == 1
    with db.open_store(settings) as con:
        assert_expected_facts(con)
        assert [r[0] for r in con.execute("select kind from llm_reviews").fetchall()] == ["contradiction"]


@pytest.mark.parametrize(("stored", "merges"), [("kept", 1), ("false", 0)])
def test_merge_stage_reads_the_verdicts_the_confidence_stage_stored(settings, stored: str, merges: int) -> None:
    from engram.consolidate.pair_rules import same_statement

    seed(settings)
    ctx = StageContext(settings, USER, "run-a", AS_OF)
    tools = Tools(from_settings(settings))
    for stage in ("embed", "extract", "confidence"):
        run_stage(ctx, stage, tools)
    with db.open_store(settings) as con:
        rows = con.execute("""select a.text, b.text, p.similarity, p.conflict, p.same_statement from run_fact_pairs p
                              join facts a on a.id = p.fact_a join facts b on b.id = p.fact_b
                              where p.user_id = $u""", {"u": USER}).fetchall()
        judged = [r for r in rows if r[2] > settings.merge_threshold]
        assert judged and any(r[4] for r in judged)  # the scenario's near-duplicate
        for a, b, sim, _, same in judged:
            assert same is same_statement(a, b, sim, settings.merge_threshold)
        assert all(r[4] is None for r in rows if r not in judged)
        if stored != "kept":  # the merge stage takes the stored verdict
            con.execute("update run_fact_pairs set same_statement = false")
    assert run_stage(ctx, "merge", tools).counts["merges"] == merges


def test_a_run_resumed_for_the_same_as_of_finishes_a_tenant_whose_episodes_it_consumed(settings) -> None:
    from engram.store.ingest import add_episodes

    add_episodes([{"user_id": "alice", "content": text, "created_at": AS_OF - timedelta(hours=n + 1)}
                  for n, text in enumerate(["I work at Acme as a data engineer.", "I moved to Lisbon in October."])],
                 settings)
    consolidate_tenants(settings, "run-1", AS_OF, ["embed", "extract"], tenants=["alice"])  # then killed, say
    assert tenants_with_work(settings, AS_OF) == []  # its episodes are consumed: no new work of its own
    assert tenants_with_work(settings, AS_OF, "run-1") == ["alice"]  # but run-1 did not finish it
    resumed = consolidate_tenants(settings, "run-1", AS_OF)
    assert list(resumed) == ["alice"] and resumed["alice"]["extract"]["skipped"] is True
    assert all(not stage.get("skipped") for name, stage in resumed["alice"].items() if name != "extract"
               and name != "embed")
    with db.open_store(settings) as con:
        stages = {r[0] for r in con.execute("select stage from runs where run_id = 'run-1' and status = 'completed'")
                  .fetchall()}
    assert stages == {"embed", "extract", "confidence", "merge", "digest", "resolve", "deprecate", "archive", "publish"}
    assert tenants_with_work(settings, AS_OF, "run-1") == []  # finished now: a further rerun leaves it out
