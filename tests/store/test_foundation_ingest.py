"""Ingestion into the store: each format, duplicates, every bad-input case, nothing half-written."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engram
from engram.errors import InvalidInput
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import (
    MAX_CONTENT_CHARS,
    IngestRejected,
    add_episodes,
    read_records,
)
from engram.store.locomo import locomo_records
from engram.text.normalize import content_hash

# The shared data sits beside the repo (<repo>/../shared), never at an absolute machine path
LOCOMO_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"


def _episodes(con: db.Connection) -> list[dict[str, Any]]:
    cur = con.execute("select * from episodes order by user_id, created_at, id")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _count(con: db.Connection) -> int:
    return con.execute("select count(*) from episodes").fetchall()[0][0]


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _ingest_file(path: Path, settings: Settings, con: db.Connection, fmt: str | None = None, **kw: Any):
    numbers, records = read_records(path, fmt)
    return add_episodes(records, settings, con=con, line_numbers=numbers, **kw)


ROWS = [
    {"user_id": "alice", "content": "I like green tea", "created_at": "2024-01-01T10:00:00Z",
     "session_id": "s1", "role": "user", "tags": ["drinks", "a"], "metadata": {"k": 1}},
    {"user_id": "alice", "content": "I moved to Paris", "created_at": "2024-01-02T12:00:00+02:00",
     "kind": "thought", "origin": "model", "is_private": True, "id": "ep-given"},
    {"user_id": "bob", "content": "Bob's deploy failed", "created_at": "2024-01-03T00:00:00",
     "kind": "event", "origin": "tool", "visibility": "global"},
]


# ---------------------------------------------------------------- formats

def test_jsonl_rows_are_stored_with_hash_status_and_utc_times(
    tmp_path: Path, settings: Settings, con: db.Connection
) -> None:
    result = _ingest_file(_write_jsonl(tmp_path / "e.jsonl", ROWS), settings, con)
    assert (result.received, result.inserted, result.duplicates, result.invalid) == (3, 3, 0, [])
    rows = _episodes(con)
    assert [r["content"] for r in rows] == ["I like green tea", "I moved to Paris", "Bob's deploy failed"]
    tea, paris, bob = rows
    assert all(r["status"] == "pending_embed" and r["embedding"] is None for r in rows)
    assert tea["content_hash"] == content_hash("I like green tea")
    assert tea["created_at"] == datetime(2024, 1, 1, 10, 0)
    assert paris["created_at"] == datetime(2024, 1, 2, 10, 0)  # +02:00 stored as UTC
    assert tea["tags"] == ["a", "drinks"]
    assert json.loads(tea["metadata"]) == {"k": 1}
    assert (tea["kind"], tea["origin"], tea["visibility"], tea["is_private"]) == ("turn", "human", "project", False)
    assert (paris["id"], paris["kind"], paris["origin"]) == ("ep-given", "thought", "model")
    assert (paris["visibility"], paris["is_private"]) == ("private", True)
    assert (bob["visibility"], bob["is_private"]) == ("global", False)
    assert tea["id"].startswith("ep_") and tea["id"] in result.ids


def test_csv_rows_with_comma_tags_and_text_booleans(tmp_path: Path, settings: Settings, con: db.Connection) -> None:
    path = tmp_path / "e.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, ["user_id", "content", "created_at", "tags", "is_private", "session_id"])
        w.writeheader()
        w.writerow({"user_id": "u1", "content": "comma, inside, text", "created_at": "2024-02-01 09:00:00",
                    "tags": "x, y", "is_private": "true", "session_id": ""})
        w.writerow({"user_id": "u1", "content": "line\nbreak", "created_at": "2024-02-02T09:00:00",
                    "tags": "", "is_private": "0", "session_id": "s9"})
    result = _ingest_file(path, settings, con)
    assert result.inserted == 2
    first, second = _episodes(con)
    assert (first["content"], first["tags"], first["is_private"], first["session_id"]) == (
        "comma, inside, text", ["x", "y"], True, None)
    assert (second["content"], second["tags"], second["is_private"], second["session_id"]) == (
        "line\nbreak", [], False, "s9")


def test_parquet_with_native_timestamps_and_lists(tmp_path: Path, settings: Settings, con: db.Connection) -> None:
    table = pa.table({
        "user_id": ["u1", "u2"],
        "content": ["parquet one", "parquet two"],
        "created_at": pa.array([datetime(2024, 3, 1, 8), datetime(2024, 3, 2, 8)], pa.timestamp("us")),
        "tags": pa.array([["t"], []], pa.list_(pa.string())),
        "is_private": [False, True],
    })
    path = tmp_path / "e.parquet"
    pq.write_table(table, path)
    result = _ingest_file(path, settings, con)
    assert result.inserted == 2
    rows = _episodes(con)
    assert [(r["user_id"], r["content"], r["created_at"], r["tags"], r["is_private"]) for r in rows] == [
        ("u1", "parquet one", datetime(2024, 3, 1, 8), ["t"], False),
        ("u2", "parquet two", datetime(2024, 3, 2, 8), [], True),
    ]


def _tiny_locomo(path: Path) -> Path:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a puppy on grass"},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The dog is called Rex."}],
        },
        "qa": [],
    }
    path.write_text(json.dumps([sample]))
    return path


def test_locomo_turns_become_episodes_with_session_date_and_dia_id(
    tmp_path: Path, settings: Settings, con: db.Connection
) -> None:
    records = locomo_records(_tiny_locomo(tmp_path / "locomo.json"))
    result = add_episodes(records, settings, con=con)
    assert result.inserted == 3
    rows = _episodes(con)
    assert [(r["id"], r["user_id"], r["role"], r["session_id"], r["created_at"]) for r in rows] == [
        ("conv-x:D1:1", "conv-x", "Ann", "conv-x:session_1", datetime(2023, 5, 8, 13, 56, 0)),
        ("conv-x:D1:2", "conv-x", "Ben", "conv-x:session_1", datetime(2023, 5, 8, 13, 56, 1)),
        ("conv-x:D2:1", "conv-x", "Ann", "conv-x:session_2", datetime(2023, 6, 9, 10, 0, 0)),
    ]
    assert rows[1]["content"] == "Nice! [shares an image: a puppy on grass]"
    meta = json.loads(rows[2]["metadata"])
    assert meta == {"dia_id": "D2:1", "session": 2, "session_date_time": "10:00 am on 9 June, 2023"}
    again = add_episodes(locomo_records(tmp_path / "locomo.json"), settings, con=con)
    assert (again.inserted, again.duplicates) == (0, 3)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.pop("session_1_date_time"), "conv-x.session_1_date_time: required"),
        (lambda c: c["session_1"][0].pop("dia_id"), "conv-x.session_1[0].dia_id: required"),
        (lambda c: c.__setitem__("session_1_date_time", "yesterday"), "session_date_time: cannot parse"),
    ],
)
def test_locomo_bad_files_raise_typed_errors(tmp_path: Path, mutate: Any, message: str) -> None:
    path = _tiny_locomo(tmp_path / "locomo.json")
    data = json.loads(path.read_text())
    mutate(data[0]["conversation"])
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match=message.replace("[", r"\[").replace("]", r"\]")):
        locomo_records(path)


@pytest.mark.shared_data
@pytest.mark.skipif(not LOCOMO_DEV.is_file(), reason=f"needs the shared LoCoMo data: {LOCOMO_DEV} is absent")
def test_locomo_dev_file_ingests_every_turn(settings: Settings, con: db.Connection) -> None:
    data = json.loads(LOCOMO_DEV.read_text())
    turns = sum(len(v) for s in data for k, v in s["conversation"].items()
                if k.startswith("session_") and isinstance(v, list))
    result = add_episodes(locomo_records(LOCOMO_DEV), settings, con=con)
    assert result.inserted == turns
    tenants = {r[0] for r in con.execute("select distinct user_id from episodes").fetchall()}
    assert tenants == {s["sample_id"] for s in data}


# ---------------------------------------------------------------- duplicates

def test_reingesting_the_same_file_adds_nothing(tmp_path: Path, settings: Settings, con: db.Connection) -> None:
    path = _write_jsonl(tmp_path / "e.jsonl", ROWS)
    _ingest_file(path, settings, con)
    before = _episodes(con)
    again = _ingest_file(path, settings, con)
    assert (again.inserted, again.duplicates) == (0, 3)
    assert _episodes(con) == before


def test_same_id_with_other_content_is_rejected_and_keeps_the_stored_row(
    settings: Settings, con: db.Connection
) -> None:
    add_episodes([{"id": "e1", "user_id": "u", "content": "first", "created_at": "2024-01-01"}], settings, con=con)
    with pytest.raises(IngestRejected, match="line 1: id: 'e1' is already stored with different content"):
        add_episodes([{"id": "e1", "user_id": "u", "content": "second", "created_at": "2024-01-02"},
                      {"user_id": "u", "content": "third", "created_at": "2024-01-03"}], settings, con=con)
    assert [e["content"] for e in _episodes(con)] == ["first"]
    skipped = add_episodes([{"id": "e1", "user_id": "u", "content": "second", "created_at": "2024-01-02"},
                            {"user_id": "u", "content": "third", "created_at": "2024-01-03"}],
                           settings, con=con, skip_invalid=True)
    assert (skipped.inserted, len(skipped.ids), [str(e) for e in skipped.invalid]) == (
        1, 1, ["line 1: id: 'e1' is already stored with different content"])
    assert [e["content"] for e in _episodes(con)] == ["first", "third"]


def test_same_text_and_time_is_one_record_only_without_an_explicit_id(
    settings: Settings, con: db.Connection
) -> None:
    add_episodes([{"id": "a", "user_id": "u", "content": "Same  Text", "created_at": "2024-01-01"}], settings, con=con)
    retry = add_episodes([{"user_id": "u", "content": "same text", "created_at": "2024-01-01"}], settings, con=con)
    assert (retry.inserted, retry.duplicates, retry.ids) == (0, 1, ["a"])
    other_id = add_episodes([{"id": "b", "user_id": "u", "content": "same text", "created_at": "2024-01-01"}],
                            settings, con=con)
    other_time = add_episodes(
        [{"id": "c", "user_id": "u", "content": "same text", "created_at": "2024-01-02"}], settings, con=con)
    other_user = add_episodes(
        [{"id": "a", "user_id": "v", "content": "same text", "created_at": "2024-01-01"}], settings, con=con)
    assert (other_id.inserted, other_time.inserted, other_user.inserted) == (1, 1, 1)
    assert sorted((e["user_id"], e["id"]) for e in _episodes(con)) == [("u", "a"), ("u", "b"), ("u", "c"), ("v", "a")]


def test_duplicates_within_one_file_are_inserted_once(tmp_path: Path, settings: Settings, con: db.Connection) -> None:
    rows = [
        {"id": "x", "user_id": "u", "content": "one", "created_at": "2024-01-01"},
        {"id": "x", "user_id": "u", "content": "one", "created_at": "2024-01-01"},
        {"user_id": "u", "content": "two", "created_at": "2024-01-03"},
        {"user_id": "u", "content": "TWO ", "created_at": "2024-01-03"},
        {"user_id": "u", "content": "two", "created_at": "2024-01-03"},
    ]
    result = _ingest_file(_write_jsonl(tmp_path / "d.jsonl", rows), settings, con)
    assert (result.received, result.inserted, result.duplicates) == (5, 2, 3)
    assert [e["content"] for e in _episodes(con)] == ["one", "two"]


def test_python_api_is_reexported(settings: Settings) -> None:
    r = engram.add_episodes([{"user_id": "u", "content": "via the package", "created_at": "2024-01-01"}], settings)
    assert r.inserted == 1
    with db.open_store(settings) as con:
        assert [e["content"] for e in _episodes(con)] == ["via the package"]


def test_default_user_fills_rows_without_one(settings: Settings, con: db.Connection) -> None:
    r = add_episodes([{"content": "no tenant", "created_at": "2024-01-01"}], settings, con=con, user_id="dflt")
    assert r.inserted == 1
    assert _episodes(con)[0]["user_id"] == "dflt"


# ---------------------------------------------------------------- bad input

BAD = [
    ('{"user_id": "u", "content": "x"', "line 1: json: malformed JSON"),
    ({"user_id": "u", "content": ""}, "line 1: content: empty text"),
    ({"user_id": "u", "content": "   \n\t"}, "line 1: content: empty text"),
    ({"user_id": "u"}, "line 1: content: expected text, got NoneType"),
    ({"content": "no tenant"}, "line 1: user_id: required"),
    ({"user_id": "", "content": "x"}, "line 1: user_id: required"),
    ({"user_id": ["u"], "content": "x"}, "line 1: user_id: expected a string, got list"),
    ({"user_id": "u", "content": 42}, "line 1: content: expected text, got int"),
    ({"user_id": "u", "content": "x", "tags": 5}, "line 1: tags: expected a list of strings"),
    ({"user_id": "u", "content": "x", "tags": [1, 2]}, "line 1: tags: expected a list of strings"),
    ({"user_id": "u", "content": "x", "is_private": "maybe"}, "line 1: is_private: expected true or false"),
    ({"user_id": "u", "content": "x", "kind": "dream"}, "line 1: kind: expected one of"),
    ({"user_id": "u", "content": "x", "origin": ["human"]}, "line 1: origin: expected one of"),
    ({"user_id": "u", "content": "x", "visibility": "public"}, "line 1: visibility: expected one of"),
    ({"user_id": "u", "content": "x", "metadata": [1]}, "line 1: metadata: expected an object"),
    ({"user_id": "u", "content": "x", "metadata": "{not json"}, "line 1: metadata: not valid JSON"),
    ({"user_id": "u", "content": "x", "colour": "red"}, "line 1: colour: unknown field"),
    ({"user_id": "u", "content": "x", "created_at": "yesterday"}, "line 1: created_at: Invalid isoformat"),
    ({"user_id": "u", "content": "x", "created_at": "2024-13-45"}, "line 1: created_at: month must be in 1..12"),
    ({"user_id": "u", "content": "x", "created_at": True}, "line 1: created_at: expected an ISO-8601"),
    ({"user_id": "u", "content": "x", "created_at": 1e20}, "line 1: created_at: timestamp 1e+20 is out of range"),
    ({"user_id": "u", "content": "nul\u0000inside"}, "line 1: content: contains a NUL character"),
    ({"user_id": "u", "content": "x" * (MAX_CONTENT_CHARS + 1)}, f"line 1: content: longer than {MAX_CONTENT_CHARS}"),
    ({"user_id": "u", "content": "x", "id": "i" * 513}, "line 1: id: longer than 512"),
    ([1, 2], "line 1: record: expected an object, got list"),
]


@pytest.mark.parametrize(("row", "message"), BAD, ids=[m.split(": ", 2)[1] + str(i) for i, (_, m) in enumerate(BAD)])
def test_each_bad_row_rejects_the_file_with_its_line_field_and_reason(
    tmp_path: Path, settings: Settings, con: db.Connection, row: Any, message: str
) -> None:
    good = {"user_id": "u", "content": "a good row", "created_at": "2024-01-01"}
    path = _write_jsonl(tmp_path / "bad.jsonl", [row, good])
    with pytest.raises(IngestRejected) as info:
        _ingest_file(path, settings, con)
    assert message in str(info.value)
    assert "nothing ingested" in str(info.value)
    assert len(info.value.errors) == 1 and info.value.errors[0].line == 1
    assert _count(con) == 0


def test_line_numbers_count_blank_lines_and_every_bad_row_is_listed(
    tmp_path: Path, settings: Settings, con: db.Connection
) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        '{"user_id": "u", "content": "ok one", "created_at": "2024-01-01"}\n'
        "\n"
        '{"user_id": "u", "content": "", "created_at": "2024-01-01"}\n'
        '{"user_id": "u", "content": "ok two", "created_at": "2024-01-02"}\n'
        "{broken\n"
    )
    with pytest.raises(IngestRejected) as info:
        _ingest_file(path, settings, con)
    assert [(e.line, e.field) for e in info.value.errors] == [(3, "content"), (5, "json")]
    assert "2 invalid row(s)" in str(info.value)
    assert _count(con) == 0
    result = _ingest_file(path, settings, con, skip_invalid=True)
    assert (result.received, result.inserted, len(result.invalid)) == (4, 2, 2)
    assert [str(e) for e in result.invalid] == [
        "line 3: content: empty text",
        "line 5: json: malformed JSON: Expecting property name enclosed in double quotes at column 2",
    ]
    assert sorted(e["content"] for e in _episodes(con)) == ["ok one", "ok two"]


def test_csv_errors_name_the_file_line_counting_the_header(tmp_path: Path, settings: Settings, con: db.Connection) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("user_id,content,created_at\nu,fine,2024-01-01\nu,,2024-01-02\nu,extra,2024-01-03,oops\n")
    with pytest.raises(IngestRejected) as info:
        _ingest_file(path, settings, con)
    assert [(e.line, e.field) for e in info.value.errors] == [(3, "content"), (4, "__extra_cells__")]
    assert _count(con) == 0


def test_many_bad_rows_are_summarised(settings: Settings, con: db.Connection) -> None:
    with pytest.raises(IngestRejected) as info:
        add_episodes([{"user_id": "u", "content": ""}] * 25, settings, con=con)
    assert len(info.value.errors) == 25
    assert "(and 5 more)" in str(info.value)


@pytest.mark.parametrize(
    ("name", "content", "fmt", "message"),
    [
        ("missing.jsonl", None, None, "file: not found"),
        ("e.txt", "hello", None, "format: unsupported 'txt'"),
        ("e.parquet", "not parquet", None, "file: not a readable parquet file"),
        ("e.jsonl", b"\xff\xfe bad utf8", None, "file: not UTF-8 text"),
    ],
)
def test_unreadable_files_raise_invalid_input(
    tmp_path: Path, name: str, content: Any, fmt: str | None, message: str
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(InvalidInput, match=message):
        read_records(path, fmt)


def test_an_insert_failure_leaves_nothing_behind(
    settings: Settings, con: db.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_rows = db.rows
    calls = {"n": 0}

    def failing_rows(c: db.Connection, name: str, **params: Any) -> list[tuple]:
        if name == "queries/store/count_episodes":
            calls["n"] += 1
            if calls["n"] == 2:  # after the insert statement ran, inside the transaction
                raise RuntimeError("disk full")
        return real_rows(c, name, **params)

    monkeypatch.setattr(db, "rows", failing_rows)
    with pytest.raises(RuntimeError, match="disk full"):
        add_episodes([{"user_id": "u", "content": f"row {i}", "created_at": "2024-01-01"} for i in range(10)],
                     settings, con=con)
    monkeypatch.setattr(db, "rows", real_rows)
    assert _count(con) == 0


# ---------------------------------------------------------------- dimension safety

def _two() -> list[dict[str, Any]]:
    return [{"user_id": "u", "content": f"vector row {i}", "created_at": "2024-01-01"} for i in range(2)]


def test_precomputed_embeddings_make_rows_active(settings: Settings, con: db.Connection) -> None:
    vectors = np.eye(2, settings.embed_dim, dtype=np.float32)
    r = add_episodes(_two(), settings, con=con, embeddings=vectors, embedding_model="my-model")
    assert r.inserted == 2
    rows = _episodes(con)
    assert [(e["status"], e["embedding_model"], e["embedding_dim"], len(e["embedding"])) for e in rows] == [
        ("active", "my-model", settings.embed_dim, settings.embed_dim)] * 2


@pytest.mark.parametrize(
    ("vectors", "model", "message"),
    [
        (np.ones((2, 10), np.float32), "m", "embedding: expected dimension 384, got shape (2, 10)"),
        (np.ones((2, 385), np.float32), "m", "embedding: expected dimension 384"),
        (np.ones(384, np.float32), "m", "embedding: expected dimension 384, got shape (384,)"),
        (np.vstack([np.ones(384), np.full(384, np.nan)]).astype(np.float32), "m",
         "embedding: row 1 contains NaN or infinite values"),
        (np.vstack([np.full(384, np.inf), np.ones(384)]).astype(np.float32), "m",
         "embedding: row 0 contains NaN or infinite values"),
        (np.ones((3, 384), np.float32), "m", "embedding: 3 vectors for 2 records"),
        (np.ones((2, 384), np.float32), None, "embedding_model: required"),
    ],
)
def test_bad_embeddings_are_rejected_naming_the_field_and_nothing_is_written(
    settings: Settings, con: db.Connection, vectors: np.ndarray, model: str | None, message: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        add_episodes(_two(), settings, con=con, embeddings=vectors, embedding_model=model)
    assert message in str(info.value)
    assert _count(con) == 0


def test_similarity_query_only_sees_vectors_of_the_requested_model_and_dim(con: db.Connection) -> None:
    """tenant_fact_vectors (the similarity stages' input) never mixes models or dimensions."""
    def fact(fid: str, model: str, dim: int) -> None:
        con.execute(
            "insert into facts (id, user_id, text, confidence, asserted_at, created_at, last_updated, "
            "last_reinforced_at, content_hash, embedding, embedding_model, embedding_dim) values "
            "($id, 'u', 't', 0.5, now(), now(), now(), now(), 'h', $emb, $model, $dim)",
            {"id": fid, "emb": [0.1] * dim, "model": model, "dim": dim},
        )
    fact("same", "m384", 384)
    fact("other-model", "m384b", 384)
    fact("other-dim", "m384", 8)
    got = db.rows(con, "queries/consolidate/tenant_fact_vectors", user_id="u", model="m384", dim=384, keys_version=1)
    assert [r[0] for r in got] == ["same"]


def test_file_rows_need_created_at_so_reingest_stays_idempotent(
    tmp_path: Path, settings: Settings, con: db.Connection
) -> None:
    path = _write_jsonl(tmp_path / "no_time.jsonl", [{"user_id": "u", "content": "when?"}])
    with pytest.raises(IngestRejected, match="line 1: created_at: required in files"):
        _ingest_file(path, settings, con, require_created_at=True)
    assert _count(con) == 0
    live = add_episodes([{"user_id": "u", "content": "live write"}], settings, con=con)
    assert live.inserted == 1  # the Python API stamps rows without a time with now


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_byte_order_mark_is_not_part_of_the_first_field(
    tmp_path: Path, settings: Settings, con: db.Connection, suffix: str
) -> None:
    path = tmp_path / f"excel.{suffix}"
    body = ("user_id,content,created_at\nu,with bom,2024-01-01\n" if suffix == "csv"
            else '{"user_id": "u", "content": "with bom", "created_at": "2024-01-01"}\n')
    path.write_bytes("\ufeff".encode() + body.encode())
    assert _ingest_file(path, settings, con).inserted == 1
    assert _episodes(con)[0]["user_id"] == "u"


def test_unicode_line_separators_inside_json_strings_do_not_split_records(
    tmp_path: Path, settings: Settings, con: db.Connection
) -> None:
    path = tmp_path / "seps.jsonl"
    rows = [{"user_id": "u", "content": f"one{sep}two", "created_at": f"2024-01-0{i + 1}"}
            for i, sep in enumerate(["\u2028", "\u0085", "\u2029"])]
    path.write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n", encoding="utf-8")
    result = _ingest_file(path, settings, con)
    assert (result.inserted, result.invalid) == (3, [])
    assert [e["content"] for e in _episodes(con)] == ["one\u2028two", "one\u0085two", "one\u2029two"]
