"""Issue 21 end to end: README's Usage block as written, the read snapshot and `engram sql`, and the CLI
points (logs, progress, tenant hints, flags, stats, explain, the changes table, the archive query).

One module store, built by running README's Usage block in bash exactly as a user pastes it: the
block's one nightly run is the only Prefect run here, and it runs while another process holds the
previous read snapshot open (the issue's second lock test).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from engram.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
runner = CliRunner()


def _section(title: str) -> str:
    """The README text under a '## title' heading, up to the next '## ' heading."""
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.DOTALL)


USAGE = _blocks(_section("Usage"), "bash")[0]
PYTHON_EXAMPLE = _blocks(_section("Usage"), "python")[0]
QUESTIONS = [q.strip() for q in _blocks(_section("Ad hoc SQL"), "sql")[0].split(";") if q.strip()]
ARCHIVE_QUERY = _blocks(_section("The archive"), "bash")[0].strip()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(ROOT), COLUMNS="200")
    bin_dir = str(Path(sys.executable).parent)  # the `engram` script of this environment comes first
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=600)


HOLDER = textwrap.dedent("""
    import sys, duckdb
    con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
    if len(sys.argv) > 3:
        con.execute("set file_search_path = ?", [sys.argv[3]])
    query = sys.stdin.readline().strip()
    while query:
        print(con.execute(query).fetchall()[0][0], flush=True)
        query = sys.stdin.readline().strip()
""")


def _holder(path: Path, mode: str, *extra: str) -> subprocess.Popen:
    """Another process holding a DuckDB file open (read-only 'ro' or read-write 'rw') until stdin closes."""
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(path), mode, *extra], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ask(holder: subprocess.Popen, query: str) -> str:
    holder.stdin.write(query + "\n")
    holder.stdin.flush()
    return holder.stdout.readline().strip()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """README's Usage block run in bash in an empty directory; around its nightly run a reader holds the
    snapshot published just before (by `engram snapshot`)."""
    cwd = tmp_path_factory.mktemp("usage")
    before, sep, after = USAGE.partition("engram consolidate")
    assert sep, "the Usage block runs the nightly flow"
    first = _bash(before, cwd)
    assert first.returncode == 0, first.stderr[-3000:]
    published = _bash("engram snapshot --json", cwd)
    assert published.returncode == 0, published.stderr[-3000:]
    old = json.loads(published.stdout)
    held = Path(old["path"]) if Path(old["path"]).is_absolute() else cwd / old["path"]
    reader = _holder(held / "snapshot.duckdb", "ro", str(held))
    try:
        assert _ask(reader, "select count(*) from episodes") == "4"  # the private episode is not in it
        second = _bash(sep + after, cwd)
        after_run = _ask(reader, "select count(*) from current_facts")  # still answers after the switch
    finally:
        reader.stdin.close()
        reader.wait(timeout=30)
    assert second.returncode == 0, second.stderr[-3000:]
    return {"cwd": cwd, "first": first, "second": second, "held": held, "held_after_run": after_run}


def _run(store: dict, *args: str):
    """The CLI in-process (CliRunner), on the module store."""
    cwd = store["cwd"]
    env = {"ENGRAM_DB_PATH": str(cwd / "data" / "engram.duckdb"), "ENGRAM_ARCHIVE_DIR": str(cwd / "data" / "archive"),
           "COLUMNS": "200"}
    return runner.invoke(app, list(args), env=env)


def _sql_json(store: dict, query: str) -> list[dict]:
    result = _run(store, "sql", "--format", "json", "--", query)  # `--`: a query may start with a comment
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _store_rows(store: dict, query: str, *params: object) -> list[tuple]:
    with duckdb.connect(str(store["cwd"] / "data" / "engram.duckdb"), read_only=True) as con:
        return con.execute(query, list(params)).fetchall()


# ---------------------------------------------------------------- README's Usage block and Python example

def test_usage_block_runs_as_written(store: dict) -> None:
    out = store["first"].stdout + store["second"].stdout
    assert "ingested 5 episode(s), 0 duplicate(s) skipped" in out
    assert "# Nightly consolidation" in out and "## tenant `alice`" in out
    assert "Lisbon" in store["second"].stdout  # the search line finds where alice lives
    assert "history (oldest first):" in out and "contradicted" in out  # explain of a contested fact
    assert "hunter2" not in out  # the private episode shows nowhere
    # what the block stored: alice's facts; the contradicting preferences stay (halved, a review queued):
    # a preference is current until revoked, so a contested one is not deprecated away
    statuses = dict(_store_rows(store, "select status, count(*) from facts where user_id = ? group by all", "alice"))
    assert statuses == {"active": 5}


def test_python_example_runs_as_written(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PYTHON_EXAMPLE], cwd=tmp_path, env={**_env(), "ENGRAM_EMBEDDER": "hash"},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "episodes I moved to Lisbon in October." in done.stdout
    with duckdb.connect(str(tmp_path / "data" / "engram.duckdb"), read_only=True) as con:
        assert con.execute("select user_id, content from episodes").fetchall() == [
            ("alice", "I moved to Lisbon in October.")]


# ---------------------------------------------------------------- the read snapshot and engram sql

def test_nightly_run_completes_while_a_reader_holds_the_snapshot(store: dict) -> None:
    root = store["cwd"] / "data" / "snapshots"
    current = (root / "current").read_text().strip()
    assert current != store["held"].name  # the run published a new snapshot and switched to it
    assert "read snapshot: " + current in store["second"].stdout
    assert store["held"].is_dir()  # the previous one is kept (ENGRAM_SNAPSHOT_KEEP=2)
    assert store["held_after_run"] == "0"  # the held snapshot (from before the run) kept answering
    # 4: the fifth active fact comes from the private episode and stays out of the snapshot
    assert _sql_json(store, "select count(*) as n from current_facts where user_id = 'alice'") == [{"n": 4}]


def test_engram_sql_answers_while_another_process_writes_the_store(store: dict) -> None:
    db_path = store["cwd"] / "data" / "engram.duckdb"
    writer = _holder(db_path, "rw")
    try:
        assert _ask(writer, "select count(*) from facts") == "5"  # the writer has the store open now
        with pytest.raises(duckdb.Error, match="lock"):  # the live store is locked for every other process
            duckdb.connect(str(db_path), read_only=True)
        done = subprocess.run(["engram", "sql", "select count(*) as n from episodes where user_id = 'alice'",
                               "--format", "csv"], cwd=store["cwd"], env=_env(), capture_output=True, text=True,
                              timeout=60, check=False)
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "n\n4\n"


def test_snapshot_leaves_private_rows_out_and_matches_the_store(store: dict) -> None:
    episodes = _sql_json(store, "select episode_id, content, is_private from episodes order by created_at")
    assert len(episodes) == 4 and not any(e["is_private"] for e in episodes)
    assert "hunter2" not in json.dumps(_sql_json(store, "select * from fact_sources"))
    live = _store_rows(store, "select id, status, evidence_count from facts where not is_private order by id")
    snap = _sql_json(store, "select fact_id, status, evidence_count from facts order by fact_id")
    assert [tuple(r.values()) for r in snap] == live
    sources = _sql_json(store, "select fact_id, relation, episode_content from fact_sources where user_id = 'alice'")
    assert len(sources) == 4 and all(s["episode_content"] for s in sources)


def test_sql_formats_table_csv_json_parquet(store: dict, tmp_path: Path) -> None:
    table = _run(store, "sql", "select user_id, episodes from tenants")
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[0].split() == ["user_id", "episodes"]
    assert table.stdout.splitlines()[2].split() == ["alice", "4"] and "(1 row)" in table.stdout
    out = tmp_path / "facts.parquet"
    written = _run(store, "sql", "select fact_id, text from current_facts", "--format", "parquet", "--out", str(out))
    assert written.exit_code == 0, written.output
    assert duckdb.sql(f"select count(*) from read_parquet('{out}')").fetchall() == [(4,)]
    no_out = _run(store, "sql", "select 1", "--format", "parquet")
    assert no_out.exit_code == 2 and "--out" in no_out.output
    bad = _run(store, "sql", "select nope from facts")
    assert bad.exit_code == 2 and "error [invalid_params]: query:" in bad.output


def test_sql_without_a_query_opens_a_shell_or_prints_the_path(store: dict) -> None:
    current = (store["cwd"] / "data" / "snapshots" / "current").read_text().strip()
    if shutil.which("duckdb"):
        done = subprocess.run(["engram", "sql"], cwd=store["cwd"], env=_env(), input="select count(*) from facts;\n",
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and "5" in done.stdout
    else:
        result = _run(store, "sql")
        assert result.exit_code == 0, result.output
        path = Path(result.stdout.strip())
        assert path.name == "snapshot.duckdb" and path.parent.name == current and path.is_file()
        assert "no duckdb CLI" in result.stderr


def test_sql_without_a_query_runs_the_duckdb_cli_on_the_snapshot(store: dict, tmp_path: Path) -> None:
    """The shell branch, with a stand-in `duckdb` on PATH that records how it was started."""
    current = (store["cwd"] / "data" / "snapshots" / "current").read_text().strip()
    bin_dir, record = tmp_path / "bin", tmp_path / "started.txt"
    bin_dir.mkdir()
    fake = bin_dir / "duckdb"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$PWD" "$@" > {record}\nexit 3\n')
    fake.chmod(0o755)
    env = _env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + str(bin_dir) + os.pathsep + env["PATH"]
    done = subprocess.run(["engram", "sql"], cwd=store["cwd"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 3, done.stderr  # the shell's exit code is the command's
    cwd, *args = record.read_text().splitlines()
    assert Path(cwd).name == current and args[0] == "-readonly" and args[-1] == "snapshot.duckdb"
    assert args[1] == "-cmd" and args[2].startswith("set allowed_directories = [") and args[3] == "-cmd"
    assert "set enable_external_access = false;" in args[4] and "set lock_configuration = true;" in args[4]


def test_no_snapshot_yet_says_how_to_make_one(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sql", "select 1"], env={"ENGRAM_DB_PATH": str(tmp_path / "x.duckdb")})
    assert result.exit_code == 2 and "error [no_snapshot]" in result.stderr and "engram snapshot" in result.stderr


# ---------------------------------------------------------------- README's analyst questions and archive query

def test_readme_questions_run_on_the_snapshot(store: dict) -> None:
    changed, dropped, cost = QUESTIONS
    run_id = _store_rows(store, "select max(run_id) from runs where user_id = 'alice'")[0][0]
    rows = _sql_json(store, changed)
    events = _store_rows(store, """select v.action, count(*) from fact_events as v join facts as f
                                    on f.user_id = v.user_id and f.id = v.fact_id
                                    where v.run_id = ? and not f.is_private group by all""", run_id)
    assert sorted((a, n) for a, n in events) == sorted(
        (a, sum(r["action"] == a for r in rows)) for a in {r["action"] for r in rows})
    assert all(r["fact_text"] and r["reason"] for r in rows)
    drops = _sql_json(store, dropped)
    assert {d["fact_text"] for d in drops} == {"The user likes spicy food.", "The user doesn't like spicy food."}
    assert all(d["action"] == "contradicted" and d["confidence_after"] < d["confidence_before"] for d in drops)
    assert {d["other_fact"] for d in drops} == {d["fact_text"] for d in drops}  # each names the other side
    # LLM cost: no LLM ran here, so seed two weeks of spend on the store's runs rows, publish, ask
    assert _sql_json(store, cost) == []
    with duckdb.connect(str(store["cwd"] / "data" / "engram.duckdb")) as con:
        con.execute("""insert into runs (run_id, user_id, stage, status, as_of, started_at, llm_calls,
                       input_tokens, output_tokens, cost_usd) values
                       ('run-w1', 'alice', 'resolve', 'completed', '2026-11-03 03:00', '2026-11-03 03:00', 2, 1000, 100, 0.25),
                       ('run-w1b', 'alice', 'extract', 'completed', '2026-11-05 03:00', '2026-11-05 03:00', 1, 500, 50, 0.5),
                       ('run-w2', 'bob', 'resolve', 'completed', '2026-11-10 03:00', '2026-11-10 03:00', 1, 10, 1, 0.125)""")
    assert _run(store, "snapshot").exit_code == 0
    assert [(r["user_id"], r["week"], r["calls"], r["tokens"], r["cost_usd"]) for r in _sql_json(store, cost)] == [
        ("alice", "2026-11-02", 3, 1650, 0.75), ("bob", "2026-11-09", 1, 11, 0.125)]


def test_readme_archive_query_works_before_any_archive(store: dict) -> None:
    assert not list((store["cwd"] / "data").glob("archive/**/*.parquet"))  # nothing archived yet
    done = _bash(ARCHIVE_QUERY, store["cwd"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == ["status", "facts"] and "(0 rows)" in done.stdout


# ---------------------------------------------------------------- the CLI points

def test_prefect_logs_go_to_the_log_file_not_the_terminal(store: dict) -> None:
    terminal = store["second"].stdout + store["second"].stderr
    assert "Beginning flow run" not in terminal and "Finished in state" not in terminal
    assert not re.search(r"^(INFO|DEBUG) ", terminal, flags=re.MULTILINE)
    log = (store["cwd"] / "data" / "engram.log").read_text()
    assert "INFO prefect.flow_runs: Beginning flow run" in log and "stage publish done" in log
    # no memory text in the log; Prefect's generated run names ("'spicy-lion'") are left out of the search
    own = re.sub(r"'[a-z]+-[a-z]+'", "''", log)
    assert "Lisbon" not in own and "spicy" not in own


def test_verbose_shows_info_in_the_terminal(store: dict) -> None:
    quiet = _run(store, "snapshot")
    loud = _run(store, "-v", "snapshot")
    assert "INFO" not in quiet.stderr
    assert "INFO engram.store.snapshot: published" in loud.stderr


def test_piped_commands_print_one_summary_line(store: dict) -> None:
    done = _bash("engram embed && engram ingest episodes.jsonl", store["cwd"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["embedded 0 row(s) with minilm/all-MiniLM-L6-v2-onnx-int8 (dim 384)",
                                        "ingested 0 episode(s), 5 duplicate(s) skipped"]
    assert done.stderr == ""


def test_a_terminal_gets_a_progress_bar(store: dict) -> None:
    main, child = pty.openpty()
    proc = subprocess.Popen(["engram", "ingest", "episodes.jsonl"], cwd=store["cwd"], env=_env(), stdin=child,
                            stdout=subprocess.PIPE, stderr=child)
    os.close(child)
    seen = b""
    while select.select([main], [], [], 30)[0]:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert proc.wait(timeout=30) == 0
    assert b"ingesting episodes.jsonl" in seen and b"5/5" in seen and "━".encode() in seen
    assert proc.stdout.read().decode() == "ingested 0 episode(s), 5 duplicate(s) skipped\n"


def test_unknown_tenant_is_named_with_the_tenants_there_are(store: dict) -> None:
    hint = "tenant 'bob' has no episodes; tenants in this store: alice (5 episodes)"
    for args in (["stats", "--user", "bob"], ["search", "anything", "--user", "bob"],
                 ["consolidate", "--user", "bob"], ["review", "list", "--user", "bob"]):
        result = _run(store, *args)
        assert result.exit_code == 0, (args, result.output)
        assert hint in result.output, args
    assert "Nightly consolidation" not in _run(store, "consolidate", "--user", "bob").output  # no run of zeros
    assert _store_rows(store, "select count(*) from runs where user_id = 'bob' and run_id not like 'run-w%'") == [(0,)]
    unknown = _run(store, "explain", "fact_x", "--user", "bob")
    assert unknown.exit_code == 2 and hint in unknown.stderr


def test_dry_run_is_a_flag_in_help() -> None:
    for args in (["consolidate", "--help"], ["export-removals", "--help"], ["reshard", "--help"]):
        text = runner.invoke(app, args, env={"COLUMNS": "200"}).stdout
        line = next(ln for ln in text.splitlines() if "--dry-run" in ln)
        assert "<bool>" not in line, line


def test_stats_names_columns_and_agrees_with_the_run_report(store: dict) -> None:
    report = store["second"].stdout
    cell = re.search(r"\| confidence \| ([^|]+) \|", report).group(1)
    counts = {k: int(v) for k, v in re.findall(r"(against|contradictions|penalised) (\d+)", cell)}
    assert counts == {"against": 0, "contradictions": 1, "penalised": 2}
    out = _run(store, "stats", "--user", "alice").stdout.splitlines()
    assert out[0].split() == ["table", "tenant", "status", "/", "relation", "/", "action", "rows"]
    header = out.index("contradictions, named as in the run report:")
    assert out[header + 1].split() == ["tenant", "against", "contradictions", "penalised"]
    assert out[header + 3].split() == ["alice", "0", "1", "2"]  # the same numbers as the report


def test_explain_is_a_table_in_time_order_then_sources(store: dict) -> None:
    fact_id = _store_rows(store, "select id from facts where text = ?", "The user likes spicy food.")[0][0]
    out = _run(store, "explain", fact_id, "--user", "alice").stdout.splitlines()
    start = out.index("history (oldest first):")
    assert out[start + 1].split() == ["when", "event", "confidence", "status", "reason", "run"]
    events = [ln.split()[2] for ln in out[start + 3:out.index("sources:") - 1]]
    assert events == ["created", "contradicted"]  # a contested preference is halved, not deprecated
    assert "0.500 -> 0.250" in out[start + 4] and "contradiction penalty" in out[start + 4]
    sources = out[out.index("sources:") + 1:]
    assert sources[0].split() == ["relation", "said", "at", "episode", "similarity", "text"]
    assert sources[2].split()[:3] == ["extracted_from", "2026-11-03", "12:00"] and "I like spicy food." in sources[2]


def test_run_changes_table_shows_text_and_reason(store: dict) -> None:
    from engram.consolidate.report import change_rows

    run_id = _store_rows(store, "select max(run_id) from runs where user_id = 'alice' and run_id like 'run-2%'")[0][0]
    changes = [dict(zip(("fact_id", "text", "action", "confidence_before", "confidence_after", "status_before",
                         "status_after", "reason"), r, strict=True))
               for r in _store_rows(store, """select v.fact_id, f.text, v.action, v.confidence_before,
                   v.confidence_after, v.status_before, v.status_after, v.reason from fact_events as v
                   join facts as f on f.user_id = v.user_id and f.id = v.fact_id
                   where v.run_id = ? order by v.fact_id, v.seq""", run_id)]
    rows = change_rows({"alice": {"publish": {"changes": changes}}}, width=20)
    drop = next(r for r in rows if r["event"] == "contradicted")
    assert drop["text"] in {"The user likes spic…", "The user doesn't li…"}
    assert drop["confidence"] == "0.500 -> 0.250" and drop["reason"] == "contradiction penal…"
    # the CLI prints the same table under the report
    assert "| event | text | confidence | status | reason | tenant | fact |" in store["second"].stdout
