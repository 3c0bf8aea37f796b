"""The archive content hash: independent of batching and storage, sensitive to every value."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engram.archive.files import (
    check_run_id,
    partition_dir,
    set_aside,
    verify,
    write_once,
)
from engram.archive.hashing import digest
from engram.errors import InvalidInput


def table() -> pa.Table:
    n = 50
    return pa.table({
        "id": [f"id{i}" for i in range(n)],
        "meta": [None if i % 3 == 0 else f'{{"n": {i}}}' for i in range(n)],
        "embedding": pa.array([None if i % 5 == 0 else [float(i), 0.5, -1.0] for i in range(n)],
                              pa.list_(pa.float32())),
        "at": pa.array([None if i % 7 == 0 else datetime(2026, 1, 1, 0, 0, i % 60) for i in range(n)],
                       pa.timestamp("us")),
        "tags": [None if i % 4 == 0 else ["a", f"t{i}"] for i in range(n)],
        "flag": [i % 2 == 0 for i in range(n)],
        "score": [i / 3 for i in range(n)],
        "count": pa.array([i for i in range(n)], pa.int32()),
    })


def test_digest_does_not_depend_on_batching_or_parquet_storage(tmp_path: Path) -> None:
    t = table()
    whole = digest([t])
    assert digest(t.to_batches(max_chunksize=7)) == whole
    path = tmp_path / "x.parquet"
    pq.write_table(t, path, compression="zstd", row_group_size=11)
    assert digest(pq.ParquetFile(path).iter_batches(batch_size=13)) == whole
    assert whole[0] == 50


@pytest.mark.parametrize("column, index, value", [
    ("id", 3, "id3x"), ("meta", 1, '{"n": 2}'), ("at", 1, None), ("tags", 2, ["a"]), ("flag", 0, False),
    ("score", 4, 1.3333333), ("count", 9, 10), ("count", 0, None), ("embedding", 0, [0.0, 0.5, -1.0]),
])
def test_digest_changes_when_one_value_changes(column: str, index: int, value: object) -> None:
    t = table()
    values = t.column(column).to_pylist()
    values[index] = value
    changed = t.set_column(t.schema.get_field_index(column), column, pa.array(values, t.schema.field(column).type))
    assert digest([changed]) != digest([t])


def test_digest_changes_with_one_embedding_bit_and_with_row_order() -> None:
    t = table()
    vecs = t.column("embedding").to_pylist()
    vecs[1] = [1.0000001, 0.5, -1.0]
    changed = t.set_column(2, "embedding", pa.array(vecs, pa.list_(pa.float32())))
    assert digest([changed]) != digest([t])
    assert digest([t.take(list(range(49, -1, -1)))]) != digest([t])
    assert digest([t.slice(0, 49)]) != digest([t])


def test_write_once_never_overwrites_and_verify_catches_truncation(tmp_path: Path) -> None:
    t = table()
    path = tmp_path / "a" / "r-1.parquet"
    written = write_once(path, t.schema, t.to_batches(max_chunksize=20))
    assert (written.rows, written.content_hash) == digest([t])
    assert verify(path, written.rows, written.content_hash, written.file_sha256, written.file_bytes) == []
    with pytest.raises(FileExistsError):
        write_once(path, t.schema, t.to_batches())
    assert [p.name for p in path.parent.iterdir()] == ["r-1.parquet"]  # no temporary file left behind
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    problems = verify(path, written.rows, written.content_hash)
    assert problems and "unreadable parquet" in problems[0]
    path.unlink()
    assert verify(path, 50, written.content_hash) == [f"{path}: file missing"]


def test_set_aside_moves_a_file_out_of_the_glob_without_overwriting(tmp_path: Path) -> None:
    for name in ("x.parquet", "x.parquet.abandoned"):
        (tmp_path / name).write_text(name)
    new = set_aside(tmp_path, "x.parquet")
    assert new == "x.parquet.abandoned-1"
    assert (tmp_path / "x.parquet.abandoned").read_text() == "x.parquet.abandoned"
    assert (tmp_path / new).read_text() == "x.parquet"
    assert not (tmp_path / "x.parquet").exists()


def test_paths_and_run_ids() -> None:
    assert partition_dir("facts", "a/b c", datetime(2026, 3, 1).date()) == "table=facts/user_id=a%2Fb%20c/date=2026-03-01"
    assert check_run_id("run-20260301T030000-ab12") == "run-20260301T030000-ab12"
    for bad in ("", "../x", "a/b", "-x"):
        with pytest.raises(InvalidInput, match="run_id"):
            check_run_id(bad)
