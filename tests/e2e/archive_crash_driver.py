"""Runs one archive operation in its own process (for crash tests): `python -m ... archive|restore`."""

from __future__ import annotations

import sys

from engram.archive.nightly import archive_due
from engram.archive.restore import restore
from engram.settings import load_settings
from tests.archive_scenario import AS_OF, USER

if __name__ == "__main__":
    settings = load_settings()
    if sys.argv[1] == "archive":
        archive_due(settings, None, AS_OF, sys.argv[2])
    else:
        restore(settings, USER)
