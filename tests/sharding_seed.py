"""Synthetic tenants for the sharding tests: a few near-duplicate episodes per topic per tenant."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

AS_OF = datetime(2026, 3, 1, 3, 0, 0)
NAMES = ["Alice", "Bob", "Carol", "Dana", "Erik", "Fay", "Gus", "Hana", "Ivan", "Jo"]
TOPICS = [
    "{n} works at {c} Corp as a senior engineer",
    "{n} drinks coffee black every single morning",
    "{n} is training for the {c} marathon in April",
]
VARIANTS = ["{t}.", "{t}", "{l}", "Note: {l}"]
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Stark"]


def tenants(n: int = 20) -> list[str]:
    """Tenant ids tenant-00 .. tenant-{n-1}."""
    return [f"tenant-{i:02d}" for i in range(n)]


def episodes(n_tenants: int = 20) -> list[dict[str, Any]]:
    """Episode records: 3 topics x 4 phrasings per tenant, dated the day before AS_OF."""
    out = []
    for i, user in enumerate(tenants(n_tenants)):
        name, company = NAMES[i % len(NAMES)], COMPANIES[i % len(COMPANIES)]
        for j, topic in enumerate(TOPICS):
            text = topic.format(n=name, c=company)
            for v, variant in enumerate(VARIANTS):
                out.append({
                    "user_id": user, "session_id": f"s{j}", "role": "user",
                    "content": variant.format(t=text, l=text.lower()),
                    "created_at": AS_OF - timedelta(days=1, minutes=10 * j + v),
                })
    return out
