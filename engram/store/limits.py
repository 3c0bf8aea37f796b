"""The limits of an episode record's fields: the one place they are defined (ingest enforces them)."""

from __future__ import annotations

MAX_CONTENT_CHARS = 1_000_000   # content
MAX_ID_CHARS = 512              # id, session_id, role, pipeline (and user_id: engram.store.tenant)
MAX_TAGS = 64                   # tags: distinct tags per record
MAX_TAG_CHARS = 200             # tags: characters per tag
MAX_METADATA_DEPTH = 32         # metadata: nesting of objects and lists
MAX_METADATA_BYTES = 64 * 1024  # metadata: UTF-8 bytes of its JSON text
