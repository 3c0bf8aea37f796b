"""Read snapshots holding a tenant: a fresh one is published from the erased store, the older ones removed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engram.erase.files import Removed, measure, remove_tree
from engram.store.snapshot import prune, publish_snapshot, snapshot_root


@dataclass
class SnapshotsErased:
    """Snapshots removed (files, bytes), the one published instead, and any a reader still holds."""

    removed: Removed = field(default_factory=Removed)
    snapshots: int = 0
    published: str | None = None
    held: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**self.removed.to_dict(), "snapshots": self.snapshots, "published": self.published,
                "held_by_readers": self.held}


def rebuild_snapshots(settings: Any, dry_run: bool) -> SnapshotsErased:
    """Publish a snapshot of the store as it is now and remove every older one (and half-written ones).

    Every snapshot taken while the tenant had rows holds them, so all older ones go; one an `engram sql`
    reader holds open stays and is named in `held` (run forget again once the reader is done). Nothing
    is published when there was no snapshot.
    """
    root = snapshot_root(settings)
    out = SnapshotsErased()
    old = sorted(p for p in [*root.glob("snap-*"), *root.glob(".tmp-snap-*")] if p.is_dir() and not p.is_symlink())
    if not old:
        return out
    sizes = {p: measure(p) for p in old}
    if dry_run:
        for size in sizes.values():
            out.removed.add(size)
        out.snapshots = len(old)
        return out
    out.published = publish_snapshot(settings).snapshot_id
    prune(settings.model_copy(update={"snapshot_keep": 1}))
    for path in old:
        if path.name.startswith(".tmp-snap-"):
            remove_tree(path, dry_run=False)  # a crashed (or racing) publish: its rows predate the erase
        if path.exists():
            out.held.append(path.name)
        else:
            out.removed.add(sizes[path])
            out.snapshots += 1
    return out

