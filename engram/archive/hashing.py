"""A content hash over Arrow rows that is the same however the rows are batched or stored.

Each column is split into byte streams (validity, fixed-width values, string lengths and bytes, list
lengths and children), each stream is hashed on its own, and the stream digests are hashed together.
A stream's bytes are a plain concatenation over batches, so the digest of a table does not depend on
batch or row-group boundaries, and it depends only on logical values (not on the writer's version),
so the digest computed while writing a parquet file can be recomputed from the file years later.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from blake3 import blake3

ALGORITHM = "engram-arrow-blake3-v1"


class RowHasher:
    """Feed record batches in order; `hexdigest()` gives the digest of all rows fed."""

    def __init__(self) -> None:
        self.rows = 0
        self._streams: dict[str, blake3] = {}
        self._seen: dict[str, int] = {}  # elements fed per column path: null positions are global
        self._names: list[str] | None = None

    def update(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Add the rows of one batch (columns must keep their names and order across batches)."""
        names = list(batch.schema.names)
        if self._names is None:
            self._names = names
        elif names != self._names:
            raise ValueError(f"columns changed between batches: {self._names} -> {names}")
        for name in names:
            column = batch.column(name)
            chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
            for chunk in chunks:
                self._feed(name, chunk)
        self.rows += batch.num_rows

    def hexdigest(self) -> str:
        """The digest over the column names, the row count and every stream."""
        final = blake3()
        final.update(f"{ALGORITHM}\nrows={self.rows}\ncolumns={','.join(self._names or [])}\n".encode())
        for key in sorted(self._seen):
            final.update(f"{key}#n={self._seen[key]}\n".encode())
        for key in sorted(self._streams):
            final.update(f"{key}={self._streams[key].hexdigest()}\n".encode())
        return final.hexdigest()

    def _put(self, key: str, data: bytes | memoryview | np.ndarray) -> None:
        if isinstance(data, np.ndarray):
            data = memoryview(np.ascontiguousarray(data)).cast("B")  # no copy for contiguous arrays
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = blake3(max_threads=blake3.AUTO)
        stream.update(data)

    def _feed_validity(self, key: str, arr: pa.Array) -> None:
        """Positions of nulls, counted from the first element ever fed, so batching does not matter."""
        offset = self._seen.get(key, 0)
        self._seen[key] = offset + len(arr)
        if arr.null_count:
            valid = arr.is_valid().to_numpy(zero_copy_only=False)
            self._put(key + "#nulls", (np.flatnonzero(~valid) + offset).astype("<i8"))

    def _feed(self, key: str, arr: pa.Array) -> None:
        if isinstance(arr, pa.ExtensionArray):
            arr = arr.storage
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        kind = arr.type
        self._feed_validity(key, arr)
        if pa.types.is_null(kind):
            return
        if pa.types.is_boolean(kind):
            values = pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(np.uint8)
            self._put(key, values)
        elif pa.types.is_integer(kind) or pa.types.is_floating(kind):
            if arr.null_count:
                arr = pc.fill_null(arr, pa.scalar(0, kind))
            values = arr.to_numpy(zero_copy_only=False)
            self._put(key, values.astype(values.dtype.newbyteorder("<"), copy=False))
        elif pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_time(kind) or pa.types.is_duration(kind):
            self._feed_temporal(key, arr)
        elif pa.types.is_decimal(kind):
            self._feed_bytes(key, arr.cast(pa.string()))
        elif (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
              or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)
              or pa.types.is_string_view(kind) or pa.types.is_binary_view(kind)):
            self._feed_bytes(key, arr)
        elif pa.types.is_map(kind):
            self._feed_lengths(key, pc.list_value_length(arr))
            self._feed(key + ".key", arr.keys)
            self._feed(key + ".value", arr.items)
        elif (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
              or pa.types.is_list_view(kind) or pa.types.is_large_list_view(kind)):
            self._feed_lengths(key, pc.list_value_length(arr))
            self._feed(key + ".[]", pc.list_flatten(arr))
        elif pa.types.is_struct(kind):
            for field, child in zip(kind, arr.flatten(), strict=True):
                self._feed(f"{key}.{field.name}", child)
        else:
            raise ValueError(f"column {key}: unsupported arrow type {kind}")

    def _feed_lengths(self, key: str, lengths: pa.Array) -> None:
        values = pc.fill_null(lengths, 0).cast(pa.int64()).to_numpy(zero_copy_only=False)
        self._put(key + "#len", values.astype("<i8", copy=False))

    def _feed_temporal(self, key: str, arr: pa.Array) -> None:
        kind = arr.type
        if pa.types.is_timestamp(kind):
            arr = arr.cast(pa.timestamp("us", kind.tz))  # a unit change on the way back is not a change
        elif pa.types.is_date(kind):
            arr = arr.cast(pa.date32())
        width = pa.int32() if pa.types.is_date32(arr.type) or arr.type.bit_width == 32 else pa.int64()
        values = pc.fill_null(arr.view(width), 0).to_numpy(zero_copy_only=False)
        self._put(key, values.astype(values.dtype.newbyteorder("<"), copy=False))

    def _feed_bytes(self, key: str, arr: pa.Array) -> None:
        flat = pc.fill_null(arr.cast(pa.large_binary()), b"")
        if not isinstance(flat, pa.Array):
            flat = pa.array(flat)
        offsets = np.frombuffer(flat.buffers()[1], dtype="<i8", count=len(flat) + 1, offset=flat.offset * 8)
        self._put(key + "#len", np.diff(offsets).astype("<i8"))
        data = flat.buffers()[2]
        if data is not None and offsets[-1] > offsets[0]:
            self._put(key, memoryview(data)[int(offsets[0]):int(offsets[-1])])


def digest(batches: Iterable[pa.RecordBatch | pa.Table]) -> tuple[int, str]:
    """Row count and digest of a sequence of batches."""
    hasher = RowHasher()
    for batch in batches:
        hasher.update(batch)
    return hasher.rows, hasher.hexdigest()
