"""One tenant has one name (issue 44, item 4): every command reads `--user` as ingest stores it.

'alice ' and full-width 'ａｌｉｃｅ' are 'alice' (NFKC, trimmed) in stats, consolidate, explain, mark-removal and
shard-of, on an 8-shard store where the raw spellings would hash to other shard files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.cli.app import app
from engram.settings import load_settings
from engram.store import db
from engram.store.sharding import for_tenant, shard_of, shard_path
from tests.query_seed import seed_facts

runner = CliRunner()
SPELLINGS = ["alice ", "ａｌｉｃｅ", " ａｌｉｃｅ\u3000"]


def invoke_json(*args: str) -> object:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def sharded(settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ENGRAM_SHARDS", "8")
    s = load_settings()
    assert {shard_of(u, 8) for u in ("alice", "alice ", "ａｌｉｃｅ")} != {shard_of("alice", 8)}  # raw: other files
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"user_id": "alice", "content": f"I drink tea number {i}",
                                        "created_at": f"2024-01-0{i + 1}T10:00:00Z"}) + "\n" for i in range(3)))
    result = runner.invoke(app, ["ingest", str(rows)])
    assert result.exit_code == 0, result.output
    with db.open_store(for_tenant(s, "alice")) as con:
        seed_facts(s, con, [{"id": "f_alice_tea", "user_id": "alice", "text": "The user drinks tea"}])
    return s


def _shards_touched(s) -> set[int]:
    """Shard numbers with any file (store, wal, inbox) beside the store."""
    return {int(m.group(1)) for p in Path(s.db_path).parent.iterdir() if (m := re.search(r"\.shard-(\d+)-of-8\.", p.name))}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_read_and_mark_commands_normalise_user(sharded, spelling: str) -> None:
    s = sharded
    home = shard_of("alice", 8)
    assert invoke_json("shard-of", "--user", spelling) == {
        "user_id": "alice", "shard": home, "shards": 8, "path": str(shard_path(s, home))}
    counts = invoke_json("stats", "--user", spelling)
    assert {r["user_id"] for r in counts} == {"alice"}
    assert sum(r["n"] for r in counts if r["table"] == "episodes") == 3
    info = invoke_json("explain", "f_alice_tea", "--user", spelling)
    assert info["fact"]["id"] == "f_alice_tea" and info["fact"]["text"] == "The user drinks tea"
    marked = invoke_json("mark-removal", "f_alice_tea", "--user", spelling, "--dry-run")
    assert marked["marked"] == 1
    assert _shards_touched(s) == {home}  # no other shard file was opened or created


def test_consolidate_normalises_user(sharded) -> None:
    s = sharded
    result = invoke_json("consolidate", "--user", "ａｌｉｃｅ", "--dry-run")
    assert list(result["tenants"]) == ["alice"]
    assert _shards_touched(s) == {shard_of("alice", 8)}
