"""The CLI as a careful user meets it: escaped memory text, no store created by a read, read-only reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.index.vector_index import CACHE
from engram.store import db
from tests.thought_seed import claim, edge

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
U = "alice"
EVIL = "Milo the cat \x1b]0;pwned\x07\x1b[2J\rlikes tuna\x9b31m \u202egnp.exe"
RAW = ("\x1b", "\r", "\x07", "\x9b", "\u202e")


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def evil_store(settings, tmp_path: Path):
    CACHE.clear()
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"user_id": U, "content": EVIL, "created_at": "2024-01-01T10:00:00Z"}) + "\n")
    assert invoke("ingest", str(rows))[0] == 0
    with db.open_store(settings) as con:
        claim(con, U, "c1", EVIL)
        claim(con, U, "c2", "Tuna is cheap")
        edge(con, U, "depends_on", "c1", "c2")
    yield settings
    CACHE.clear()


@pytest.mark.parametrize("args", [
    ("search", "Milo cat tuna", "--user", U, "--method", "lexical"),
    ("explain", "c1", "--user", U),
    ("claim", "list", "--user", U),
    ("claim", "show", "c1", "--user", U),
    ("why", "claim", "c1", "--user", U),
])
def test_human_output_escapes_control_characters(evil_store, args) -> None:
    code, out, err = invoke(*args)
    assert code == 0, err
    assert "pwned" in out and "\\x1b" in out
    assert not any(ch in out for ch in RAW), repr(out)


def test_json_output_keeps_memory_text_exact(evil_store) -> None:
    code, out, _ = invoke("search", "Milo cat tuna", "--user", U, "--method", "lexical", "--json")
    assert code == 0 and json.loads(out)["results"][0]["text"] == EVIL
    code, out, _ = invoke("claim", "show", "c1", "--user", U, "--json")
    assert code == 0 and json.loads(out)["text"] == EVIL


# ---------------------------------------------------------------- a read never creates a store


def engram(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    base.update(PYTHONPATH=str(ROOT), ENGRAM_EMBEDDER="hash", ENGRAM_LLM="none", **env)
    return subprocess.run([sys.executable, "-m", "engram.cli.app", *args], cwd=cwd, env=base,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args", [
    ("search", "tea", "--user", U),
    ("stats",),
    ("check",),
    ("explain", "f1", "--user", U),
    ("claim", "list", "--user", U),
    ("removal-candidates",),
    ("embed",),
])
def test_read_commands_on_a_missing_store_say_so_and_create_nothing(settings, tmp_path: Path, args) -> None:
    missing = tmp_path / "typo" / "engarm.duckdb"
    os.environ["ENGRAM_DB_PATH"] = str(missing)  # restored by the settings fixture's monkeypatch
    code, out, err = invoke(*args)
    assert code != 0, out
    assert f"no store at {missing}" in err
    assert not missing.exists() and not missing.parent.exists()


def test_init_creates_the_store(settings, tmp_path: Path) -> None:
    path = tmp_path / "new" / "engram.duckdb"
    os.environ["ENGRAM_DB_PATH"] = str(path)
    assert invoke("init")[0] == 0 and path.is_file()
    assert invoke("stats")[0] == 0


# ---------------------------------------------------------------- reads open the store read-only


@pytest.fixture
def held_read_only(settings, tmp_path: Path):
    """A store another process holds open read-only (as a backup job or a read-only mount would):
    a writable open waits for the lock, a read-only open shares it."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"user_id": U, "content": "I like tea", "created_at": "2024-01-01T10:00:00Z"}) + "\n")
    assert invoke("ingest", str(rows))[0] == 0
    with db.open_store(settings) as con:
        claim(con, U, "f1", "The user likes tea")
        (ep,), = con.execute("select id from episodes").fetchall()
        con.execute("insert into fact_sources (user_id, fact_id, episode_id, relation, similarity) "
                    "values (?, 'f1', ?, 'extracted_from', 0.9)", [U, ep])
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); "
         "print('held', flush=True); time.sleep(120)", str(settings.db_path)],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    yield Path(settings.db_path)
    holder.kill()
    holder.wait()


@pytest.mark.parametrize("args", [
    ("stats",),
    ("check",),
    ("explain", "f1", "--user", U),
    ("removal-candidates",),
    ("search", "tea", "--user", U, "--method", "lexical"),
    ("claim", "list", "--user", U),
])
def test_read_commands_open_the_store_read_only(held_read_only: Path, tmp_path: Path, args) -> None:
    proc = engram(*args, cwd=tmp_path, ENGRAM_DB_PATH=str(held_read_only), ENGRAM_LOCK_TIMEOUT_S="1")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
