"""Input limits of an episode record: each refused as InvalidInput naming the field and the record."""

from __future__ import annotations

import pytest

from engram.settings import Settings
from engram.store import db
from engram.store.ingest import IngestRejected, add_episodes
from engram.store.limits import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_TAG_CHARS, MAX_TAGS


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"k": value}
    return value


CASES = [
    ({"metadata": _nested(900)}, "metadata", f"nested deeper than {MAX_METADATA_DEPTH} levels"),
    ({"metadata": "[" * 5000 + "]" * 5000}, "metadata", "nested deeper"),
    ({"metadata": {"blob": "x" * (MAX_METADATA_BYTES + 1)}}, "metadata", f"larger than {MAX_METADATA_BYTES}"),
    ({"created_at": "9999-12-31T23:00:00-05:00"}, "created_at", "out of range"),
    ({"content": "\u200b\u200c\u200d\u2060\ufeff"}, "content", "empty text"),
    ({"content": "\u0301\u0308\u20dd"}, "content", "empty text"),
    ({"content": "\u202e\u2066\u200f\u3164"}, "content", "empty text"),
    ({"tags": [f"t{i}" for i in range(100_000)]}, "tags", f"more than {MAX_TAGS} tags"),
    ({"tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}, "tags", f"more than {MAX_TAGS} tags"),
    ({"tags": ["x" * 5_000_000]}, "tags", f"longer than {MAX_TAG_CHARS}"),
]


@pytest.mark.parametrize(("extra", "field", "reason"), CASES)
def test_a_record_over_a_limit_is_refused_naming_the_field(settings: Settings, extra: dict, field: str,
                                                           reason: str) -> None:
    with db.open_store(settings):  # the store exists: the refusal, not a missing file, is what is asserted
        pass
    good = {"user_id": "alice", "content": "a good record"}
    with pytest.raises(IngestRejected) as info:
        add_episodes([good, {"user_id": "alice", "content": "the bad one", **extra}], settings)
    assert info.value.code == "invalid_params"
    [error] = info.value.errors
    assert (error.line, error.field) == (2, field) and reason in error.reason
    with db.open_store(settings, read_only=True) as con:  # all or nothing: the good record is not stored either
        assert con.execute("select count(*) from episodes").fetchall() == [(0,)]


def test_records_at_the_limits_are_stored(settings: Settings) -> None:
    record = {"user_id": "alice", "content": "e\u0301 caf\u00e9", "tags": [f"t{i}" for i in range(MAX_TAGS)],
              "metadata": _nested(MAX_METADATA_DEPTH - 1), "created_at": "9999-12-31T18:00:00-05:00"}
    assert add_episodes([record, {"user_id": "alice", "content": "x", "tags": ["y" * MAX_TAG_CHARS]}],
                        settings).inserted == 2
