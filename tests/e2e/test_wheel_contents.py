"""The wheel ships one import package, engram, with its SQL, sample data and every module (issue 20).

Cheap: builds the wheel (no venv, no install) from a copy of the tree and reads its file list.
.ci/wheel_check goes further: installs it into a fresh venv and runs the demo from an empty directory.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The repo folders shipped inside the package (pyproject's package-dir) and where they land
MAPPED = {"engram": "engram", "flows": "engram/flows", "tasks": "engram/tasks",
          "deployments": "engram/deployments", "sql": "engram/sql", "data": "engram/data"}
# Never copied: a stale build/lib would leak deleted modules into the wheel; stores are not source
TOP_SKIP = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", ".hypothesis", ".pytest_cache",
                                  ".ruff_cache")
ANY_SKIP = shutil.ignore_patterns("__pycache__", "*.duckdb", "*.duckdb.*")


def _skip(folder: str, names: list[str]) -> set[str]:
    skipped = set(ANY_SKIP(folder, names))
    if Path(folder) == REPO:
        skipped |= TOP_SKIP(folder, names)
    if Path(folder) == REPO / "data":
        skipped |= {"archive", "snapshots"} & set(names)  # the default store's archive, git-ignored
    return skipped


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The file names inside a wheel built from a copy of the working tree."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=_skip)
    # Build isolation: the venv's own setuptools may be older than the PEP 639 license field needs;
    # pip takes setuptools from its index or find-links (offline here: /opt/wheels).
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--quiet",
                           "-w", str(tmp / "dist")], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"pip wheel failed:\n{done.stdout}\n{done.stderr}"
    (wheel,) = (tmp / "dist").glob("engram-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def _repo_files(pattern: str) -> set[str]:
    """Repo files matching pattern, named as they land in the wheel."""
    out = set()
    for folder, target in MAPPED.items():
        for path in (REPO / folder).rglob(pattern):
            if "__pycache__" not in path.parts:
                out.add(f"{target}/{path.relative_to(REPO / folder).as_posix()}")
    return out


def test_one_top_level_package_and_its_dist_info(wheel_names: set[str]) -> None:
    tops = {name.split("/")[0] for name in wheel_names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert len(dist_info) == 1 and tops - dist_info == {"engram"}, sorted(tops)
    assert not any(n.startswith(("bench/", "tests/", "engram/bench/", "engram/tests/")) for n in wheel_names)


def test_every_sql_file_ships_under_engram_sql(wheel_names: set[str]) -> None:
    sql = _repo_files("*.sql")
    assert sql and all(n.startswith("engram/sql/") for n in sql)
    assert sql <= wheel_names, sorted(sql - wheel_names)[:10]
    assert {"engram/sql/checks", "engram/sql/queries/store", "engram/sql/schema", "engram/sql/views"} <= {
        n.rsplit("/", 1)[0] for n in wheel_names if n.endswith(".sql")}


def test_sample_data_and_vocabulary_ship(wheel_names: set[str]) -> None:
    assert "engram/data/sample_episodes.jsonl" in wheel_names
    assert "engram/resources/minilm_vocab.txt" in wheel_names
    assert not any(n.endswith((".duckdb", ".wal")) for n in wheel_names)


def test_every_module_of_the_mapped_folders_ships(wheel_names: set[str]) -> None:
    # pyproject lists the packages by hand: a new subpackage missing from that list would not ship
    modules = _repo_files("*.py")
    assert modules <= wheel_names, f"not in the wheel (add the package to pyproject): {sorted(modules - wheel_names)}"
