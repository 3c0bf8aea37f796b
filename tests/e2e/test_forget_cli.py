"""Issue 57, item 5: `engram forget --user U` erases a tenant completely, as a user types it.

One module store holds carol's episodes (with a canary text), facts from a night, inbox segments and a
rejected record, archive files, on-disk search indexes, two read snapshots and log lines; alice has all
of that too. The fixture records the store directory before, after `engram forget --dry-run` and after
`engram forget --yes`; the tests read those records.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
CANARY = "quokka-canary-5be1d7 locker code"
CAROL, ALICE = "carol", "alice"
BASE_ENV = {"ENGRAM_EMBEDDER": "hash", "ENGRAM_SEARCH_INDEX_MIN_ROWS": "0"}
LOCKER = "import sys, duckdb\ncon = duckdb.connect(sys.argv[1])\nprint('held', flush=True)\nsys.stdin.readline()\n"


def engram(*args: str, cwd: Path, extra: dict[str, str] | None = None, stdin: str | None = None
           ) -> subprocess.CompletedProcess:
    """The CLI in a subprocess, as a user runs it (stdin a pipe, so never a terminal)."""
    exe = shutil.which("engram", path=str(Path(sys.executable).parent)) or shutil.which("engram") or ""
    cmd = [exe, *args] if exe else [sys.executable, "-m", "engram.cli.app", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=str(ROOT), COLUMNS="200", **BASE_ENV,
               **(extra or {}))
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
                          input=stdin if stdin is not None else "")


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def episodes(user: str, prefix: str, extra: str = "") -> list[dict]:
    texts = [f"I moved to Lisbon in October. {extra}", f"I work at Acme as a data engineer. {extra}",
             "I like spicy food.", f"My sister lives in Porto. {extra}"]
    return [{"id": f"{prefix}{i}", "user_id": user, "session_id": "s1", "role": "user", "content": t.strip(),
             "created_at": f"2026-11-0{i + 1}T09:00:00Z"} for i, t in enumerate(texts)]


def files_under(root: Path) -> list[Path]:
    """Every file under root, recursively, never following a symlink (the snapshot's archive link)."""
    out = []
    for folder, dirs, names in os.walk(root):
        out += [Path(folder) / n for n in names if not (Path(folder) / n).is_symlink()]
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
    return sorted(out)


def holding(needle: bytes, root: Path) -> list[str]:
    """Files under root whose bytes or path hold needle."""
    return [str(p.relative_to(root)) for p in files_under(root)
            if needle in p.read_bytes() or needle.decode() in str(p.relative_to(root))]


def parquet_values_naming(root: Path, text: str) -> list[str]:
    """Parquet files under root with a string value holding text (zstd may hide it from a byte search)."""
    found = []
    for path in files_under(root):
        if not path.name.endswith(".parquet"):
            continue
        table = pq.read_table(path)
        for column in table.columns:
            if pa.types.is_string(column.type) and any(text in (v or "") for v in column.to_pylist()):
                found.append(str(path.relative_to(root)))
                break
    return found


def tenant_counts(db_path: Path) -> dict[tuple[str, str], int]:
    """Rows per (table, tenant) over every table with a user_id column."""
    with duckdb.connect(str(db_path), read_only=True) as con:
        tables = [r[0] for r in con.execute(
            "select table_name from information_schema.columns where table_schema = 'main' "
            "and column_name = 'user_id' and table_name in (select table_name from information_schema.tables "
            "where table_type = 'BASE TABLE')").fetchall()]
        out = {}
        for t in tables:
            for user, n in con.execute(f'select user_id, count(*) from "{t}" group by user_id').fetchall():
                out[(t, user)] = n
    return out


def digests(root: Path, skip: set[str]) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files_under(root) if p.name not in skip}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Both tenants through every place engram keeps data, then a dry run, then the erase."""
    cwd = tmp_path_factory.mktemp("forget")
    inputs = tmp_path_factory.mktemp("inputs")  # the input files name carol: kept out of the store directory
    data = cwd / "data"
    store = data / "engram.duckdb"
    ok(engram("init", cwd=cwd))
    first = write_jsonl(inputs / "first.jsonl", episodes(CAROL, "c", CANARY) + episodes(ALICE, "a"))
    ok(engram("ingest", str(first), cwd=cwd))
    # while another process holds the store the writes wait in the inbox; one reuses an id for other text,
    # which the fold keeps aside in rejected/
    later = write_jsonl(inputs / "later.jsonl", [
        {"id": "c0", "user_id": CAROL, "content": f"not what c0 said: {CANARY}", "created_at": "2026-11-05T09:00:00Z"},
        {"id": "c9", "user_id": CAROL, "content": f"A new note, {CANARY}.", "created_at": "2026-11-05T10:00:00Z"},
        {"id": "a9", "user_id": ALICE, "content": "A new note of alice.", "created_at": "2026-11-05T10:00:00Z"},
    ])
    holder = subprocess.Popen([sys.executable, "-c", LOCKER, str(store)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        queued = ok(engram("ingest", str(later), cwd=cwd, extra={"ENGRAM_LOCK_TIMEOUT_S": "0"}))
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert "queued" in queued.stdout
    ok(engram("consolidate", cwd=cwd))  # the night: fold, embed, facts, indexes, snapshot, log lines
    for user, ids in ((CAROL, ["c1"]), (ALICE, ["a1"])):
        ok(engram("mark-removal", "--user", user, "--table", "episodes", *ids, cwd=cwd))
    ok(engram("export-removals", "--older-than-days", "0", cwd=cwd))
    ok(engram("finalize-removal", cwd=cwd))
    ok(engram("snapshot", cwd=cwd))
    ok(engram("sql", "select count(*) from episodes", cwd=cwd))
    before = {"counts": tenant_counts(store), "files": digests(data, skip={"engram.log"}),
              "log": (data / "engram.log").read_text(), "canary": holding(CANARY.encode(), data),
              "carol": holding(CAROL.encode(), data), "parquet": parquet_values_naming(data, CAROL),
              "snapshots": len(list((data / "snapshots").glob("snap-*")))}
    dry = ok(engram("forget", "--user", CAROL, "--dry-run", "--json", cwd=cwd))
    after_dry = {"counts": tenant_counts(store), "files": digests(data, skip={"engram.log"}),
                 "log": (data / "engram.log").read_text()}
    refused = engram("forget", "--user", CAROL, cwd=cwd)  # no --yes, stdin not a terminal
    after_refused = tenant_counts(store)
    forgot = ok(engram("forget", "--user", CAROL, "--yes", "--json", cwd=cwd))
    return {"cwd": cwd, "data": data, "store": store, "before": before, "dry": json.loads(dry.stdout),
            "after_dry": after_dry, "refused": refused, "after_refused": after_refused,
            "report": json.loads(forgot.stdout), "after": tenant_counts(store)}


def test_the_scenario_puts_carol_everywhere(world: dict) -> None:
    """The erase below has something to find in each place (else it proves nothing)."""
    before = world["before"]
    places = {p.split("/")[0] for p in before["carol"] + before["canary"] + before["parquet"]}
    assert {"engram.duckdb", "engram.duckdb.inbox", "engram.duckdb.indexes", "archive", "snapshots",
            "engram.log"} <= places, places
    assert any("rejected" in p for p in before["canary"]), before["canary"]
    assert any(t == "facts" and u == CAROL for t, u in before["counts"])
    assert any(t == "archive_rows" and u == CAROL for t, u in before["counts"])
    assert before["snapshots"] == 2


def test_forget_leaves_no_byte_of_carol_under_the_store_directory(world: dict) -> None:
    data = world["data"]
    assert holding(CANARY.encode(), data) == []
    assert holding(CAROL.encode(), data) == []
    assert parquet_values_naming(data, CAROL) == []
    assert not any(u == CAROL for _t, u in world["after"])
    report = world["report"]
    assert report["complete"] and report["dry_run"] is False
    assert report["rows"]["episodes"] == world["before"]["counts"][("episodes", CAROL)]
    assert report["total_rows"] == sum(n for (_t, u), n in world["before"]["counts"].items() if u == CAROL)
    assert report["store_bytes_after"] > 0 and report["archive"]["files"] >= 1 and report["inbox"]["files"] >= 1
    # the audit keeps a count, never the tenant
    assert "forget: erased one tenant" in (data / "engram.log").read_text()


def test_forget_keeps_every_row_of_alice_and_her_searches(world: dict) -> None:
    before = {k: n for k, n in world["before"]["counts"].items() if k[1] != CAROL}
    assert world["after"] == before
    hits = ok(engram("search", "when did I move to Lisbon?", "--user", ALICE, "--json", cwd=world["cwd"]))
    assert "Lisbon" in hits.stdout and "stale" not in hits.stderr, hits.stderr
    assert world["report"]["other_tenants_reindexed"] == 1
    listed = ok(engram("archive-exports", "--user", ALICE, "--json", cwd=world["cwd"]))
    assert json.loads(listed.stdout) and all(x["user_id"] == ALICE for x in json.loads(listed.stdout))
    restored = ok(engram("restore", "--user", ALICE, "a1", "--dry-run", "--json", cwd=world["cwd"]))
    assert json.loads(restored.stdout)["rows"]["episodes"] == 1  # her archive still reads back
    assert ok(engram("sql", "select count(*) as n from episodes", "--format", "json", cwd=world["cwd"]))
    assert ok(engram("check", cwd=world["cwd"]))


def test_dry_run_reports_what_would_go_and_removes_nothing(world: dict) -> None:
    before, after, dry = world["before"], world["after_dry"], world["dry"]
    assert after["counts"] == before["counts"]
    assert after["files"] == before["files"]
    assert after["log"].count(CAROL) == before["log"].count(CAROL) > 0
    assert dry["dry_run"] is True and dry["store_bytes_after"] is None
    assert dry["rows"] == world["report"]["rows"]
    assert dry["archive"]["files"] == world["report"]["archive"]["files"] >= 1
    assert dry["snapshots"]["snapshots"] == 2 and dry["inbox"]["files"] >= 1
    assert sum(dry["log_lines"].values()) >= 1


def test_forget_without_yes_and_no_terminal_erases_nothing(world: dict) -> None:
    refused = world["refused"]
    assert refused.returncode == 2 and "error [invalid_params]: yes:" in refused.stderr
    assert world["after_refused"] == world["before"]["counts"]


def test_a_sharded_store_rewrites_only_carols_shard(tmp_path: Path) -> None:
    from engram.settings import load_settings
    from engram.store.sharding import for_tenant, shard_of

    others = [u for u in (f"user{i}" for i in range(20)) if shard_of(u, 2) != shard_of(CAROL, 2)]
    other = others[0]
    extra = {"ENGRAM_SHARDS": "2"}
    records = episodes(CAROL, "c", CANARY) + episodes(other, "o") + episodes(f"{other}2", "p")
    ok(engram("ingest", str(write_jsonl(tmp_path / "in.jsonl", records)), cwd=tmp_path, extra=extra))
    settings = load_settings(db_path=tmp_path / "data" / "engram.duckdb", shards=2)
    hers, theirs = Path(for_tenant(settings, CAROL).db_path), Path(for_tenant(settings, other).db_path)
    assert CANARY.encode() in hers.read_bytes()
    untouched = hashlib.sha256(theirs.read_bytes()).hexdigest()
    counts = tenant_counts(theirs)
    proc = ok(engram("forget", "--user", CAROL, "--yes", cwd=tmp_path, extra=extra))
    assert "erased tenant carol" in proc.stdout
    assert CANARY.encode() not in hers.read_bytes() and CAROL.encode() not in hers.read_bytes()
    assert hashlib.sha256(theirs.read_bytes()).hexdigest() == untouched and tenant_counts(theirs) == counts
    assert not any(u == CAROL for _t, u in tenant_counts(hers))
    wal = hers.with_name(hers.name + ".wal")
    assert not wal.exists() or wal.stat().st_size == 0


# ---------------------------------------------------------------- the library under the command


def test_a_table_without_user_id_stops_the_erase_before_anything_goes(settings) -> None:
    from engram import add_episodes
    from engram.erase.catalog import UnscopedTable
    from engram.erase.forget import forget_tenant
    from engram.store import db, inbox

    add_episodes([{"user_id": CAROL, "content": CANARY, "created_at": "2026-11-01T09:00:00Z"}], settings)
    folder = inbox.tenant_dir(settings, CAROL)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / inbox.USER_FILE).write_text(CAROL)
    with db.open_store(settings) as con:
        con.execute("create table notes (body varchar)")  # a new table that forgot its tenant column
    with pytest.raises(UnscopedTable, match="notes"):
        forget_tenant(settings, CAROL)
    assert tenant_counts(Path(settings.db_path))[("episodes", CAROL)] == 1
    assert (folder / inbox.USER_FILE).is_file()


def test_an_archive_file_shared_with_another_tenant_is_rewritten_without_her_rows(settings) -> None:
    from datetime import datetime

    from engram import add_episodes
    from engram.archive.files import verify, write_manifest_entry
    from engram.archive.hashing import digest
    from engram.erase.forget import forget_tenant
    from engram.store import db

    add_episodes([{"user_id": u, "content": f"a line of {u}", "created_at": "2026-11-01T09:00:00Z"}
                  for u in (ALICE, CAROL)], settings)
    rel = "table=episodes/user_id=alice/date=2026-11-02/mixed-1.parquet"
    path = Path(settings.archive_dir) / rel
    path.parent.mkdir(parents=True)
    rows = pa.table({"user_id": [ALICE, CAROL, ALICE], "id": ["a1", "c1", "a2"],
                     "content": ["alice one", CANARY, "alice two"]})
    pq.write_table(rows, path)
    with db.open_store(settings) as con:
        db.execute(con, "queries/archive/archive_insert_export", export_id="ax1", batch_id="r/alice", run_id="r",
                   user_id=ALICE, table_name="episodes", partition_date=datetime(2026, 11, 2).date(), path=rel,
                   note="test", now=datetime(2026, 11, 2))
    write_manifest_entry(Path(settings.archive_dir), {"export_id": "ax1", "user_id": ALICE, "path": rel,
                                                      "row_count": 3})
    report = forget_tenant(settings, CAROL)
    assert (report.archive.rewritten, report.archive.rewritten_rows) == ([rel], 1)
    left = pq.read_table(path)
    assert left["id"].to_pylist() == ["a1", "a2"] and CANARY.encode() not in path.read_bytes()
    with duckdb.connect(str(settings.db_path), read_only=True) as con:
        n, content_hash, sha, size = con.execute("select row_count, content_hash, file_sha256, file_bytes "
                                                 "from archive_exports where export_id = 'ax1'").fetchall()[0]
    assert (n, content_hash) == digest([left])
    assert verify(path, n, content_hash, sha, size) == []
    entry = json.loads((Path(settings.archive_dir) / "_manifest" / "ax1.json").read_text())
    assert (entry["row_count"], entry["file_sha256"]) == (2, sha)


def test_log_lines_naming_her_go_and_lines_of_a_longer_name_stay(tmp_path: Path) -> None:
    from engram.erase.logs import erase_lines, tenant_pattern
    from engram.store.inbox import tenant_key

    log = tmp_path / "engram.log"
    log.write_text(f"INFO tenant carol: done\nINFO tenant caroline: done\nINFO dir {tenant_key(CAROL)}/x\n"
                   "INFO user_id=carol\nINFO nothing here\n")
    assert erase_lines(log, tenant_pattern(CAROL), dry_run=True) == 3 and log.read_text().count("\n") == 5
    assert erase_lines(log, tenant_pattern(CAROL), dry_run=False) == 3
    assert log.read_text() == "INFO tenant caroline: done\nINFO nothing here\n"
