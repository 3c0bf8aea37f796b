"""Sample the facts a night stored from the BEAM dev chats, for the audit of GUIDELINE.md (issue 58: at most
5% of them not facts). Facts from turns that hold a labelled statement (labels/) are left out, so the
audit reads nothing the filter was fitted on. The store is the one `python -m bench.quality.answer_budget
--keep DIR` builds (DIR/night/store.duckdb); the sample's text stays outside the project, the committed
audit labels (fact_audit/labels.jsonl) name facts by id.

    python -m bench.fit.distil.sample_facts --store DIR/night/store.duckdb --out /tmp/facts200.jsonl
    python -m bench.fit.distil.sample_facts --store DIR/night/store.duckdb --report
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

import duckdb

from bench.fit.distil.sample_statements import read_labels

HERE = Path(__file__).resolve().parent
SIZE = 200
QUERY = """
select f.id, f.user_id, f.text, f.claim_type, e.content, e.role, e.id
from facts f
join fact_sources s on s.fact_id = f.id and s.relation = 'extracted_from' and s.user_id = f.user_id
join episodes e on e.id = s.episode_id and e.user_id = f.user_id
where f.user_id like 'beam%' and f.status = 'active' and f.category = 'general'
qualify row_number() over (partition by f.id order by e.created_at) = 1
"""


def labelled_turns() -> set[str]:
    """The BEAM turns a labelled statement comes from."""
    keys = [key.split(":", 1) for key in read_labels()]
    return {rest.rsplit(":", 1)[0] for source, rest in keys if source == "beam"}


def sample(store: Path, seed: int = 58) -> list[dict[str, str]]:
    """SIZE active extracted facts of the BEAM tenants, none from a labelled turn."""
    con = duckdb.connect(str(store), read_only=True)
    rows = [r for r in con.execute(QUERY).fetchall() if r[6] not in labelled_turns()]
    rows.sort(key=lambda r: r[0])
    random.Random(seed).shuffle(rows)
    return [{"fact_id": r[0], "user": r[1], "fact": r[2], "claim_type": r[3], "source_turn": r[4][:800],
             "role": r[5]} for r in rows[:SIZE]]


def report(labels: Path) -> str:
    """The audit's numbers."""
    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    no = [r for r in rows if r["keep"] == "no"]
    reasons = Counter(r["reason"] for r in no)
    unreadable = sum(r.get("readable") == "no" for r in rows)
    return (f"{len(rows)} facts audited: {len(no)} not facts by the guideline ({len(no) / len(rows):.1%}; "
            + ", ".join(f"{k} {v}" for k, v in reasons.most_common()) + f"); not readable {unreadable} "
            f"({unreadable / len(rows):.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--report", action="store_true", help="print the audit of fact_audit/labels.jsonl")
    args = parser.parse_args()
    if args.report:
        print(report(HERE / "fact_audit" / "labels.jsonl"))
        return
    with args.out.open("w", encoding="utf-8") as fh:
        for row in sample(args.store):
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
