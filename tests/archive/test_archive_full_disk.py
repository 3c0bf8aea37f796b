"""Archive directory on a full disk: the stage fails fast with a clear error, the store lock is released,
the live rows are untouched, nothing is left in 'writing', and the next run archives the rows."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engram.consolidate.runner import run_tenant
from engram.errors import StoreError
from engram.store import db
from tests.archive_scenario import (
    AS_OF,
    DUE,
    TABLE_KEYS,
    USER,
    archived_ids,
    seed,
    snapshot,
    violations,
)


def snapshots(settings) -> dict[str, list]:
    with db.open_store(settings) as con:
        return {t: snapshot(con, t) for t in TABLE_KEYS}


def export_statuses(settings) -> list[str]:
    with db.open_store(settings) as con:
        return [r[0] for r in con.execute("select status from archive_exports order by all").fetchall()]


def stage_row(settings, run_id: str) -> tuple | None:
    with db.open_store(settings) as con:
        found = con.execute("select status, error from runs where run_id = $r and user_id = $u and stage = 'archive'",
                            {"r": run_id, "u": USER}).fetchall()
    return found[0] if found else None


def leases(settings) -> list[tuple]:
    with db.open_store(settings) as con:
        return con.execute("select * from run_leases").fetchall()


def other_process_can_open(path: Path) -> bool:
    """Whether a second process gets the store read-write within 5 s (the lock was released)."""
    code = "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, timeout=60, check=False)
    return done.returncode == 0


def assert_failed_cleanly(settings, before: dict, exc: BaseException, run_id: str, seconds: float) -> None:
    assert seconds < 10, f"took {seconds:.1f}s"
    assert "no space left" in str(exc).lower() and "archive" in str(exc).lower()
    assert other_process_can_open(Path(settings.db_path))  # while the error (and its traceback) is still alive
    assert snapshots(settings) == before
    assert "writing" not in export_statuses(settings)
    assert list(Path(settings.archive_dir).rglob("*.parquet")) == []
    assert [p for p in Path(settings.archive_dir).rglob(".*tmp-*")] == []
    status, error = stage_row(settings, run_id)
    assert status == "failed" and "no space left" in error.lower()
    assert leases(settings) == []


def assert_next_run_archives(settings) -> None:
    result = run_tenant(settings, USER, "run-next", AS_OF, ["archive"])
    assert result["archive"].counts["archived_facts"] == len(DUE[(USER, "facts")])
    with db.open_store(settings) as con:
        assert archived_ids(con, "facts", USER) == sorted(DUE[(USER, "facts")])
        assert violations(con) == {}
    assert stage_row(settings, "run-next") == ("completed", None)


def test_a_retry_of_the_same_run_that_succeeds_replaces_the_failed_row(settings, monkeypatch) -> None:
    seed(settings)

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", full)
    with pytest.raises(StoreError):
        run_tenant(settings, USER, "run-1", AS_OF, ["archive"])
    assert stage_row(settings, "run-1")[0] == "failed"
    monkeypatch.undo()
    run_tenant(settings, USER, "run-1", AS_OF, ["archive"])
    assert stage_row(settings, "run-1") == ("completed", None)  # the failed row became the completed one


def test_enospc_from_the_parquet_writer_fails_the_stage_fast_and_the_next_run_retries(settings, monkeypatch) -> None:
    seed(settings)
    before = snapshots(settings)

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", full)
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        run_tenant(settings, USER, "run-full", AS_OF, ["archive"])
    assert_failed_cleanly(settings, before, caught.value, "run-full", time.monotonic() - started)
    monkeypatch.undo()
    assert_next_run_archives(settings)


def _mount_tmpfs(target: Path, size: str) -> str | None:
    """Mount a size-limited tmpfs at target; the reason when this machine cannot."""
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("mount") is None:
        return "needs Linux and root to mount a size-limited tmpfs"
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)],
                          capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else f"mount tmpfs failed: {done.stderr.strip()}"


def test_archive_dir_on_a_really_full_filesystem(settings) -> None:
    archive_dir = Path(settings.archive_dir)
    reason = _mount_tmpfs(archive_dir, "512k")
    if reason:
        pytest.skip(reason)
    try:
        seed(settings)
        before = snapshots(settings)
        filler = archive_dir / "filler"
        with filler.open("wb", buffering=0) as handle:
            try:
                while True:
                    handle.write(b"x" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            run_tenant(settings, USER, "run-full", AS_OF, ["archive"])
        assert_failed_cleanly(settings, before, caught.value, "run-full", time.monotonic() - started)
        filler.unlink()  # the operator frees space; the next run retries
        assert_next_run_archives(settings)
    finally:
        subprocess.run(["umount", "-l", str(archive_dir)], check=False)
