"""What the inbox's fold set aside in this process (quarantined segments, refused records, a tenant folder
it cannot name): commands report them after their work, and the embedding worker once per pass.

Kept per process, not returned up the call chain, because the fold runs deep inside the embedding queue and
the night's first stage, whose results do not carry it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

MAX_KEPT = 1000  # a worker that nobody asks keeps only the latest


@dataclass(frozen=True)
class Notice:
    """One thing set aside: `kind` is quarantined, rejected or tenant_dir; `path` the file it concerns."""

    kind: str
    path: str
    reason: str
    records: int = 0

    def line(self) -> str:
        """The notice as one line for a terminal or a log (names the file, never memory text)."""
        if self.kind == "quarantined":
            return f"inbox segment quarantined: {self.path} ({self.reason})"
        if self.kind == "rejected":
            return f"inbox: {self.records} record(s) refused, kept in {self.path} ({self.reason})"
        return f"inbox tenant folder skipped: {self.path} ({self.reason})"


_NOTICES: list[Notice] = []
_LOCK = threading.Lock()


def add(notice: Notice) -> None:
    """Record one notice."""
    with _LOCK:
        _NOTICES.append(notice)
        del _NOTICES[:-MAX_KEPT]


def take() -> list[Notice]:
    """Every notice recorded since the last take (each once), oldest first."""
    with _LOCK:
        out = list(dict.fromkeys(_NOTICES))
        _NOTICES.clear()
    return out
