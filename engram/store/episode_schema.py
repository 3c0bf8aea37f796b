"""The Arrow schema of an episode row, as ingest inserts it and the inbox keeps it in a segment."""

from __future__ import annotations

import pyarrow as pa

EPISODE_SCHEMA = pa.schema(
    [
        ("id", pa.string()), ("user_id", pa.string()), ("kind", pa.string()), ("role", pa.string()),
        ("session_id", pa.string()), ("content", pa.string()), ("created_at", pa.timestamp("us")),
        ("ingested_at", pa.timestamp("us")), ("origin", pa.string()), ("visibility", pa.string()),
        ("is_private", pa.bool_()), ("tags", pa.list_(pa.string())), ("content_hash", pa.string()),
        ("embedding", pa.list_(pa.float32())), ("embedding_model", pa.string()),
        ("embedding_dim", pa.int32()), ("status", pa.string()), ("is_summary", pa.bool_()),
        ("summary_of", pa.list_(pa.string())), ("pipeline", pa.string()), ("metadata", pa.string()),
        ("id_given", pa.bool_()),
    ]
)


def schema_problem(schema: pa.Schema) -> str | None:
    """Why rows of `schema` are not episode rows (None when every episode column is there, of its type)."""
    for want in EPISODE_SCHEMA:
        idx = schema.get_field_index(want.name)
        if idx < 0:
            return f"wrong schema: no column {want.name!r}"
        if not schema.field(idx).type.equals(want.type):
            return f"wrong schema: column {want.name!r} is {schema.field(idx).type}, expected {want.type}"
    return None
