"""A library call writes nothing to stderr (issue: a search printed "episodes index generation ... was
found stale in this process; searching exactly" through Python's last-resort handler)."""

from __future__ import annotations

import subprocess
import sys


def test_engram_log_lines_reach_no_stderr_unless_the_application_configures_logging(tmp_path) -> None:
    code = ("import logging, engram\n"
            "from engram.index import cache\n"
            "cache.log.warning('episodes index generation g1 was found stale in this process')\n"
            "logging.getLogger('engram.store.ingest').error('write: a failure')\n")
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert quiet.stderr == ""

    configured = subprocess.run([sys.executable, "-c", "import logging; logging.basicConfig()\n" + code],
                                capture_output=True, text=True, cwd=tmp_path, check=True)
    assert "was found stale" in configured.stderr and "a failure" in configured.stderr
