"""Subprocess body of the crash tests: one nightly run of the scenario tenant (settings from env)."""

from __future__ import annotations

import sys

from engram import consolidate
from engram.settings import load_settings
from tests.consolidation_scenario import AS_OF, USER

if __name__ == "__main__":
    stages = sys.argv[1].split(",") if len(sys.argv) > 1 else list(consolidate.STAGES)
    consolidate.run_tenant(load_settings(), USER, "run-crash", AS_OF, stages=stages)
