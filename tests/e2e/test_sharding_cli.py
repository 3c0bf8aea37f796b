"""CLI over a sharded store: ingest routes rows to their tenant's shard, stats fans out, reshard moves them."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from engram.cli.app import app
from engram.store import db
from engram.store.sharding import shard_of, shard_path
from tests.sharding_seed import episodes

runner = CliRunner()


def write_jsonl(path, records) -> None:
    path.write_text("\n".join(json.dumps({**r, "created_at": r["created_at"].isoformat()}) for r in records))


def stats(user: str | None = None) -> list[dict]:
    res = runner.invoke(app, ["stats", "--json", *(["--user", user] if user else [])])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_ingest_stats_and_reshard_through_the_cli(settings, tmp_path, monkeypatch) -> None:
    src = tmp_path / "eps.jsonl"
    write_jsonl(src, episodes(8))
    res = runner.invoke(app, ["ingest", str(src), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["inserted"] == 8 * 12
    one = stats()

    res = runner.invoke(app, ["reshard", "--to", "4", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tenants"] == 8
    monkeypatch.setenv("ENGRAM_SHARDS", "4")
    assert stats() == one  # fan-out over the 4 shard files gives the same counts
    assert stats("tenant-03") == [r for r in one if r["user_id"] == "tenant-03"]
    res = runner.invoke(app, ["shard-of", "--user", "tenant-03", "--json"])
    assert json.loads(res.stdout)["shard"] == shard_of("tenant-03", 4)

    # a new file is routed row by row; re-ingesting it adds nothing
    more = tmp_path / "more.jsonl"
    write_jsonl(more, [{**e, "content": e["content"] + " again"} for e in episodes(8)])
    for inserted in (96, 0):
        res = runner.invoke(app, ["ingest", str(more), "--json"])
        assert res.exit_code == 0 and json.loads(res.stdout)["inserted"] == inserted, res.output
    s4 = settings.model_copy(update={"shards": 4})
    for k in range(4):
        if not shard_path(s4, k).exists():  # a shard none of the 8 tenants hash to is never created
            continue
        with db.connect(shard_path(s4, k), read_only=True) as con:
            users = {u for (u,) in con.execute("select distinct user_id from episodes").fetchall()}
        assert all(shard_of(u, 4) == k for u in users)


def test_rejected_file_writes_nothing_on_any_shard(settings, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_SHARDS", "4")
    bad = tmp_path / "bad.jsonl"
    rows = [{**e, "created_at": e["created_at"].isoformat()} for e in episodes(4)]
    rows[-1]["kind"] = "bogus"
    bad.write_text("\n".join(json.dumps(r) for r in rows))
    res = runner.invoke(app, ["ingest", str(bad)])
    assert res.exit_code == 2 and "kind" in res.output
    none = runner.invoke(app, ["stats", "--json"])  # no shard file was created at all
    assert none.exit_code == 2 and "no store at" in none.output
