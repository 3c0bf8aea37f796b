"""What a command says about the inbox after its work: the notices of its folds, as lines and counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from engram.store import inbox_notices
from engram.store.inbox_notices import Notice


@dataclass
class InboxReport:
    """The notices of one command's folds: `failed` when a segment was quarantined or a tenant folder skipped
    (an operator must look: the command exits 1 after finishing its other work)."""

    notices: list[Notice] = field(default_factory=list)

    @property
    def quarantined(self) -> int:
        return sum(n.kind == "quarantined" for n in self.notices)

    @property
    def rejected(self) -> int:
        return sum(n.records for n in self.notices if n.kind == "rejected")

    @property
    def skipped_dirs(self) -> int:
        return len({n.path for n in self.notices if n.kind == "tenant_dir"})

    @property
    def failed(self) -> bool:
        return bool(self.quarantined or self.skipped_dirs)

    def lines(self) -> list[str]:
        """One line per notice, then the error line when the command must fail."""
        out = [n.line() for n in self.notices]
        if self.failed:
            out.append(f"error [inbox_corrupt]: {self.quarantined} inbox segment(s) quarantined, "
                       f"{self.skipped_dirs} tenant folder(s) skipped; every other record was processed "
                       "(engram check lists them)")
        return out

    def counts(self) -> dict[str, int]:
        """The counts for a JSON reply."""
        return {"quarantined": self.quarantined, "rejected": self.rejected, "tenant_dirs_skipped": self.skipped_dirs}


def collect() -> InboxReport:
    """The notices recorded since the last collect (each once)."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for n in inbox_notices.take():
        if (n.kind, n.path) not in seen:
            seen.add((n.kind, n.path))
            kept.append(n)
    return InboxReport(kept)
