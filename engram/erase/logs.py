"""Log lines naming a tenant: engram's log file (and rotated copies) rewritten without them."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from engram.archive.files import user_dir
from engram.settings import log_file_for
from engram.store.durable import fsync_dir, write_then_rename
from engram.store.inbox import tenant_key

_WORD = rb"[A-Za-z0-9_]"


def log_files(settings: Any) -> list[Path]:
    """ENGRAM_LOG_FILE (else engram.log beside the store) and its rotated copies (engram.log.1, .gz, ...)."""
    path = log_file_for(settings)
    if not path.parent.is_dir():
        return []
    return sorted(p for p in path.parent.glob(f"{path.name}*") if p.is_file() and not p.is_symlink()
                  and (p == path or p.name[len(path.name)] in ".-_"))


def tenant_pattern(user_id: str) -> re.Pattern[bytes]:
    """Lines naming the tenant: its user_id (as written, percent-quoted, JSON-escaped, as an archive
    directory) or its tenant key, as a whole word: 'carol' does not match 'caroline'."""
    forms = {user_id, quote(user_id, safe=""), json.dumps(user_id)[1:-1], user_dir(user_id), tenant_key(user_id)}
    alternatives = b"|".join(re.escape(f.encode("utf-8")) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rb"(?<!" + _WORD + rb")(?:" + alternatives + rb")(?!" + _WORD + rb")")


def erase_lines(path: Path, pattern: re.Pattern[bytes], dry_run: bool) -> int:
    """Rewrite one log file without the lines the pattern finds (a temporary file renamed over it); their count."""
    _flush_handlers(path)  # this process's last lines first, so they are read (and kept or dropped) too
    zipped = path.suffix == ".gz"
    raw = path.read_bytes()
    lines = (gzip.decompress(raw) if zipped else raw).splitlines(keepends=True)
    kept = [line for line in lines if not pattern.search(line)]
    dropped = len(lines) - len(kept)
    if dry_run or not dropped:
        return dropped
    body = b"".join(kept)
    write_then_rename(path, lambda fh: fh.write(gzip.compress(body) if zipped else body),
                      path.with_name(f".{path.name}.forget-{os.getpid()}"))
    fsync_dir(path.parent)
    reopen_handlers(path)
    return dropped


def _handlers(path: Path) -> list[logging.FileHandler]:
    target = os.path.abspath(path)
    return [h for h in logging.getLogger().handlers
            if isinstance(h, logging.FileHandler) and os.path.abspath(h.baseFilename) == target]


def _flush_handlers(path: Path) -> None:
    for handler in _handlers(path):
        handler.flush()


def reopen_handlers(path: Path) -> None:
    """Point this process's file handlers on path at the rewritten file (they held the replaced one open)."""
    for handler in _handlers(path):
        handler.acquire()
        try:
            if handler.stream is not None:
                handler.stream.close()
                handler.stream = None  # opened again at the next record (append)
        finally:
            handler.release()
