"""Plant the bad inbox files an attacker (or a failing disk) leaves in a tenant's inbox folder."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa

from engram.settings import Settings
from engram.store import inbox
from engram.store.ingest import add_episodes

KINDS = ("truncated", "zero_length", "bit_flipped", "random_bytes", "wrong_schema")


def queue(settings: Settings, user: str, content: str) -> inbox.Segment:
    """Write one record to the inbox (ENGRAM_HOT_PATH=inbox) and return its pending segment."""
    agent = settings.model_copy(update={"hot_path": "inbox"})
    before = {s.stem for s in inbox.segments(agent, user)}
    add_episodes([{"user_id": user, "content": content}], agent)
    return next(s for s in inbox.segments(agent, user) if s.stem not in before)


def plant(settings: Settings, user: str, kind: str) -> Path:
    """A bad pending segment of `kind` in the tenant's folder; returns its path."""
    if kind == "bit_flipped":  # a real record whose text has one bit flipped on disk
        path = queue(settings, user, "a record the disk damaged").path
        data = bytearray(path.read_bytes())
        data[data.find(b"damaged")] ^= 0x01
        path.write_bytes(bytes(data))
        inbox.CACHE._tables.clear()  # the writer's own copy in memory: read it back from the disk
        return path
    folder = inbox.tenant_dir(settings, user)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.time_ns():020d}-{os.getpid()}-0badf11e.arrow"
    if kind == "truncated":
        good = queue(settings, user, "a record cut short").path
        data = good.read_bytes()
        good.unlink()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "zero_length":
        path.write_bytes(b"")
    elif kind == "random_bytes":
        path.write_bytes(os.urandom(3000))
    elif kind == "wrong_schema":
        table = pa.table({"text": ["not an episode"], "n": [1]})
        with pa.OSFile(str(path), "wb") as fh, pa.ipc.new_file(fh, table.schema) as writer:
            writer.write_table(table)
    else:
        raise ValueError(kind)
    return path
