"""Every test bench/perf/RELIABILITY.md names exists (a report that cites a removed test misleads)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "bench" / "perf" / "RELIABILITY.md"
# `tests/x/test_y.py::test_z[param]`, then `::test_w` in the same cell meaning the same file
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?::(\w+)(?:\[[^`\]]*\])?`")


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file, test) of every reference, a bare `::name` taking the file named before it."""
    out, current = [], None
    for m in REFERENCE.finditer(text):
        current = m.group(1) or current
        if current is not None:
            out.append((current, m.group(2)))
    return out


def test_the_reference_reader_sees_both_spellings() -> None:
    text = "`tests/a/test_b.py::test_c[x-1]`, `::test_d` and `tests/e/test_f.py::test_g`"
    assert named_tests(text) == [("tests/a/test_b.py", "test_c"), ("tests/a/test_b.py", "test_d"),
                                 ("tests/e/test_f.py", "test_g")]


def test_every_test_the_reliability_report_names_exists() -> None:
    names = named_tests(REPORT.read_text(encoding="utf-8"))
    assert len(names) > 50
    missing = [f"{f}::{t}" for f, t in names
               if not (ROOT / f).is_file() or not re.search(rf"^(async )?def {t}\(", (ROOT / f).read_text(), re.M)]
    assert missing == []
