"""Every named statement in sql/queries/<part>/ is run by some code of the product, and no code names a missing one."""

from __future__ import annotations

import re
from pathlib import Path

from engram.store import db

ROOT = Path(__file__).resolve().parents[2]
CODE = [p for d in ("engram", "flows", "tasks", "deployments") for p in (ROOT / d).rglob("*.py")]
LITERAL = re.compile(r"""["']queries/(\w+/\w+)["']""")
# a family named through an f-string, e.g. f"queries/archive/archive_due_{table}": its prefix, expanded below
FAMILY = re.compile(r"""f["']queries/(\w+/\w+?)\{""")


def _named() -> tuple[set[str], set[str]]:
    literal, families = set(), set()
    for path in CODE:
        text = path.read_text()
        literal |= set(LITERAL.findall(text))
        families |= set(FAMILY.findall(text))
    return literal, families


def test_every_query_file_is_named_by_the_product() -> None:
    literal, families = _named()
    files = {f"{p.parent.name}/{p.stem}" for p in (db.SQL_DIR / "queries").glob("*/*.sql")}
    assert not list((db.SQL_DIR / "queries").glob("*.sql"))  # each statement lives in the folder of its part
    orphans = sorted(f for f in files if f not in literal and not any(f.startswith(prefix) for prefix in families))
    assert orphans == []


def test_every_literal_name_has_its_file() -> None:
    literal, _ = _named()
    missing = sorted(n for n in literal if not (db.SQL_DIR / "queries" / f"{n}.sql").is_file())
    assert missing == []
