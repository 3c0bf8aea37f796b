"""Subprocess body of the reliability tests: one nightly run of the scenario tenant (settings from env).

Exit status 3 means another run held the tenant's lease (a clean refusal, nothing written).
"""

from __future__ import annotations

import sys

from engram.consolidate import runner as consolidate
from engram.settings import load_settings
from engram.store.runs import LeaseHeld
from tests.consolidation_scenario import AS_OF, USER

if __name__ == "__main__":
    stages = sys.argv[1].split(",") if len(sys.argv) > 1 else list(consolidate.STAGES)
    try:
        consolidate.run_tenant(load_settings(), USER, "run-crash", AS_OF, stages=stages)
    except LeaseHeld as exc:
        print(f"lease held: {exc}", file=sys.stderr)
        sys.exit(3)
