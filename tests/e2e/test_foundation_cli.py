"""The engram CLI end to end: init, ingest, embed, stats, config, check, --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.settings import Settings

runner = CliRunner()

ROWS = [
    {"user_id": "alice", "content": "I like green tea", "created_at": "2024-01-01T10:00:00Z"},
    {"user_id": "alice", "content": "I moved to Paris", "created_at": "2024-01-02T10:00:00Z"},
    {"user_id": "bob", "content": "Bob's deploy failed", "created_at": "2024-01-03T10:00:00Z"},
]


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _episodes(settings: Settings) -> list[tuple]:
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        return con.execute("select user_id, content, status from episodes order by created_at").fetchall()


def test_help_lists_every_command_with_a_line() -> None:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-m", "engram.cli.app", "--help"], capture_output=True, text=True,
                         env=env, check=True).stdout
    import typer

    commands = typer.main.get_command(app).commands  # what click will dispatch: the source of truth
    names = [name for name, cmd in commands.items() if not cmd.hidden]
    assert {"init", "config", "ingest", "embed", "stats", "check"} <= set(names)
    for name in names:
        line = next((ln for ln in out.splitlines() if f" {name} " in ln), None)
        assert line is not None, f"{name} missing from --help"
        assert len(line.split(name, 1)[1].strip(" │")) > 5, f"{name} has no help line"


def test_init_creates_the_store_and_is_idempotent(settings: Settings) -> None:
    first = runner.invoke(app, ["init"])
    assert first.exit_code == 0, first.output
    assert f"store ready: {settings.db_path}" in first.output
    second = runner.invoke(app, ["init"])
    assert second.exit_code == 0 and "(0 schema file(s) applied)" in second.output
    assert settings.db_path.is_file()


def test_ingest_embed_stats_round_trip(tmp_path: Path, settings: Settings) -> None:
    path = _jsonl(tmp_path / "e.jsonl", ROWS)
    r = runner.invoke(app, ["ingest", str(path)])
    assert r.exit_code == 0, r.output
    assert "ingested 3 episode(s), 0 duplicate(s) skipped" in r.output
    again = runner.invoke(app, ["ingest", str(path), "--json"])
    assert json.loads(again.stdout) == {"received": 3, "inserted": 0, "queued": 0, "duplicates": 3, "invalid": []}
    assert {s for *_, s in _episodes(settings)} == {"pending_embed"}

    e = runner.invoke(app, ["embed"])
    assert e.exit_code == 0, e.output
    assert "embedded 3 row(s) with hash/hash-ngram-v1-384 (dim 384)" in e.output
    assert {s for *_, s in _episodes(settings)} == {"active"}

    stats = runner.invoke(app, ["stats", "--json"])
    assert stats.exit_code == 0
    assert json.loads(stats.stdout) == [
        {"table": "episodes", "user_id": "alice", "status": "active", "n": 2},
        {"table": "episodes", "user_id": "bob", "status": "active", "n": 1},
    ]
    only_bob = runner.invoke(app, ["stats", "--user", "bob"])
    assert "bob" in only_bob.output and "alice" not in only_bob.output


def test_stats_on_an_empty_store(settings: Settings) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0  # stats never creates a store (issue 16)
    r = runner.invoke(app, ["stats"])
    assert r.exit_code == 0 and "the store is empty" in r.output


def test_ingest_each_format_by_suffix_or_flag(tmp_path: Path, settings: Settings) -> None:
    csv_path = tmp_path / "e.csv"
    csv_path.write_text("user_id,content,created_at,tags\nu,from csv,2024-01-01,\"a,b\"\n")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"user_id": ["u"], "content": ["from parquet"], "created_at": ["2024-01-02"]}),
                   tmp_path / "e.data")
    locomo = tmp_path / "conv.json"
    locomo.write_text(json.dumps({"sample_id": "c1", "conversation": {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "from locomo"}]}}))
    assert runner.invoke(app, ["ingest", str(csv_path)]).exit_code == 0
    assert runner.invoke(app, ["ingest", str(tmp_path / "e.data"), "--format", "parquet"]).exit_code == 0
    r = runner.invoke(app, ["ingest", str(locomo), "--format", "locomo"])
    assert r.exit_code == 0, r.output
    assert [c for _, c, _ in _episodes(settings)] == ["from locomo", "from csv", "from parquet"]


def test_a_bad_file_is_rejected_whole_with_line_numbers(tmp_path: Path, settings: Settings) -> None:
    path = _jsonl(tmp_path / "bad.jsonl", [ROWS[0], {"user_id": "u", "content": "", "created_at": "2024-01-01"},
                                           "{oops", {"content": "x", "created_at": "2024-01-01"}])
    r = runner.invoke(app, ["ingest", str(path)])
    assert r.exit_code == 2
    assert f"{path}: line 2: content: empty text" in r.stderr
    assert f"{path}: line 3: json: malformed JSON" in r.stderr
    assert f"{path}: line 4: user_id: required" in r.stderr
    assert "error [invalid_params]: 3 invalid row(s), nothing ingested" in r.stderr
    assert not settings.db_path.exists() or _episodes(settings) == []

    skip = runner.invoke(app, ["ingest", str(path), "--skip-invalid", "--json"])
    assert skip.exit_code == 0, skip.output
    summary = json.loads(skip.stdout)
    assert (summary["inserted"], len(summary["invalid"])) == (1, 3)
    assert summary["invalid"][0] == "line 2: content: empty text"
    assert [c for _, c, _ in _episodes(settings)] == ["I like green tea"]


def test_ingest_with_default_user(tmp_path: Path, settings: Settings) -> None:
    path = _jsonl(tmp_path / "e.jsonl", [{"content": "tenantless", "created_at": "2024-01-01"}])
    assert runner.invoke(app, ["ingest", str(path)]).exit_code == 2
    assert runner.invoke(app, ["ingest", str(path), "--user", "carol"]).exit_code == 0
    assert _episodes(settings) == [("carol", "tenantless", "pending_embed")]


def test_ingest_missing_file_and_unknown_format(tmp_path: Path, settings: Settings) -> None:
    r = runner.invoke(app, ["ingest", str(tmp_path / "nope.jsonl")])
    assert r.exit_code == 2 and "file: not found" in r.stderr
    (tmp_path / "x.xml").write_text("<a/>")
    r = runner.invoke(app, ["ingest", str(tmp_path / "x.xml")])
    assert r.exit_code == 2 and "format: unsupported 'xml'" in r.stderr


def test_embed_failure_is_a_typed_error(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    runner.invoke(app, ["ingest", str(_jsonl(tmp_path / "e.jsonl", ROWS))])
    monkeypatch.setenv("ENGRAM_EMBEDDER", "gemini")  # no key configured
    r = runner.invoke(app, ["embed"])
    assert r.exit_code == 2
    assert "error [embedder_unavailable]" in r.stderr and "ENGRAM_GEMINI_API_KEY" in r.stderr
    assert {s for *_, s in _episodes(settings)} == {"pending_embed"}


def test_config_masks_the_secret(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_GEMINI_API_KEY", "sk-live-123")
    monkeypatch.setenv("ENGRAM_TOP_K", "7")
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 0
    assert "sk-live-123" not in r.output
    lines = {ln.split()[0]: ln.split(None, 1)[1] if len(ln.split()) > 1 else "" for ln in r.output.splitlines()}
    assert lines["ENGRAM_GEMINI_API_KEY"] == "********"
    assert lines["ENGRAM_TOP_K"] == "7"
    as_json = json.loads(runner.invoke(app, ["config", "--json"]).stdout)
    assert as_json["gemini_api_key"] == "********" and as_json["top_k"] == 7


def test_config_rejects_an_invalid_variable_by_name(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_TOP_K", "lots")
    r = runner.invoke(app, ["config"])
    assert r.exit_code == 2
    assert "ENGRAM_TOP_K" in r.stderr and "'lots'" in r.stderr


def test_check_passes_then_fails_on_a_violation(settings: Settings) -> None:
    assert runner.invoke(app, ["init"]).exit_code == 0
    ok = runner.invoke(app, ["check", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["ok"] is True
    with duckdb.connect(str(settings.db_path)) as con:
        con.execute(
            "insert into facts (id, user_id, text, confidence, asserted_at, created_at, last_updated, "
            "last_reinforced_at, content_hash) values ('f1', 'u', 't', 1.7, now(), now(), now(), now(), 'h')"
        )
    bad = runner.invoke(app, ["check"])
    assert bad.exit_code == 1
    assert "FAIL confidence_in_range: 1" in bad.output
    assert "FAIL facts_have_sources: 1" in bad.output
    assert "ok   no_cross_tenant_links: 0" in bad.output


def test_the_installed_entry_point_runs_a_real_process(tmp_path: Path, settings: Settings) -> None:
    exe = Path(sys.executable).parent / "engram"
    if not exe.is_file():
        pytest.skip("engram console script not installed in this environment")
    path = _jsonl(tmp_path / "e.jsonl", ROWS)
    for args in (["init"], ["ingest", str(path)], ["embed"], ["stats", "--json"]):
        done = subprocess.run([str(exe), *args], capture_output=True, text=True, env=os.environ.copy())
        assert done.returncode == 0, done.stderr
    assert sum(row["n"] for row in json.loads(done.stdout)) == 3
