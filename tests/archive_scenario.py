"""A seeded store for archive tests: retired rows of every kind and age, a merge chain, two tenants.

The expected due sets are written out by hand from the scenario (retention 30 days at AS_OF).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa

from engram.embed.models import HashEmbedder
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import add_episodes
from engram.text.normalize import content_hash

AS_OF = datetime(2026, 3, 1, 3, 0, 0)
USER, OTHER = "u1", "u/2 odd"  # the second tenant id needs escaping in a hive path

# episode id: (tenant, status, days since the status changed (None: no status_changed_at), days since ingest)
EPISODES = {
    "e1": (USER, "active", None, 60), "e2": (USER, "active", None, 60), "e3": (USER, "active", None, 60),
    "e4": (USER, "active", None, 60), "e5": (USER, "active", None, 60),
    "e_rm_old": (USER, "removal", 40, 60), "e_rm_new": (USER, "removal", 5, 60),
    "e_rm_legacy": (USER, "removal", None, 45),
    "x1": (OTHER, "active", None, 60), "x_rm": (OTHER, "removal", 31, 60),
}
# fact id: (tenant, status, days since last_updated, merged_into_id, source episode ids)
FACTS = {
    "f_active": (USER, "active", 2, None, ["e1", "e2"]),
    "f_dep_old": (USER, "deprecated", 40, None, ["e3"]),
    "f_dep_new": (USER, "deprecated", 10, None, ["e3"]),
    "f_loser": (USER, "merged_into", 40, "f_active", ["e1"]),
    "f_top": (USER, "deprecated", 40, None, ["e2"]),           # due, but f_mid (not due) points to it
    "f_mid": (USER, "merged_into", 5, "f_top", ["e2"]),
    "f_rm": (USER, "removal", 35, None, ["e_rm_old", "e4"]),
    "f_retracted": (USER, "retracted", 31, None, ["e5"]),
    "f_superseded": (USER, "superseded", 50, None, ["e4"]),
    "g_active": (OTHER, "active", 1, None, ["x1"]),
    "g_dep": (OTHER, "deprecated", 40, None, ["x1"]),
}
DUE = {
    (USER, "facts"): {"f_dep_old", "f_loser", "f_rm", "f_retracted", "f_superseded"},
    (USER, "episodes"): {"e_rm_old", "e_rm_legacy"},
    (OTHER, "facts"): {"g_dep"},
    (OTHER, "episodes"): {"x_rm"},
}
TABLE_KEYS = {"episodes": "user_id, id", "facts": "user_id, id", "fact_sources": "user_id, fact_id, episode_id, relation"}


def seed(settings: Settings) -> None:
    """Write the scenario's episodes (with embeddings, tags, metadata), facts and fact_sources."""
    emb = HashEmbedder(settings.embed_dim)
    for tenant in (USER, OTHER):
        mine = [(eid, spec) for eid, spec in EPISODES.items() if spec[0] == tenant]
        records = [
            {"id": eid, "user_id": tenant, "content": f"episode {eid} about {tenant}", "tags": ["t", eid],
             "metadata": {"n": i, "src": "test"}, "session_id": "s1", "role": "user",
             "created_at": AS_OF - timedelta(days=spec[3] + 1)}
            for i, (eid, spec) in enumerate(mine)
        ]
        add_episodes(records, settings, embeddings=emb.embed([r["content"] for r in records]),
                     embedding_model=emb.model)
    episode_rows = pa.Table.from_pylist([
        {"user_id": t, "id": eid, "status": status,
         "status_changed_at": None if changed is None else AS_OF - timedelta(days=changed),
         "ingested_at": AS_OF - timedelta(days=ingested)}
        for eid, (t, status, changed, ingested) in EPISODES.items()
    ], schema=pa.schema([("user_id", pa.string()), ("id", pa.string()), ("status", pa.string()),
                         ("status_changed_at", pa.timestamp("us")), ("ingested_at", pa.timestamp("us"))]))
    facts, sources = [], []
    for fid, (tenant, status, days, merged, eps) in FACTS.items():
        at = AS_OF - timedelta(days=days)
        text = f"fact {fid} of {tenant}"
        facts.append({
            "id": fid, "user_id": tenant, "text": text, "confidence": 0.42, "confidence_at": at,
            "status": status, "merged_into_id": merged, "evidence_count": len(eps), "asserted_at": at,
            "valid_from": at, "created_at": at - timedelta(days=1), "last_updated": at, "last_reinforced_at": at,
            "embedding": emb.embed([text])[0].tolist(), "embedding_model": emb.model, "embedding_dim": emb.dim,
            "content_hash": content_hash(text), "tags": ["k"], "run_id": "seed",
        })
        sources += [{"user_id": tenant, "fact_id": fid, "episode_id": e, "relation": "extracted_from",
                     "similarity": 0.9, "run_id": "seed", "created_at": at} for e in eps]
    with db.open_store(settings) as con, db.transaction(con):
        with db.registered(con, "seed_episode_status", episode_rows):
            con.execute(
                "update episodes as e set status = s.status, status_changed_at = s.status_changed_at,"
                " ingested_at = s.ingested_at from seed_episode_status as s"
                " where e.user_id = s.user_id and e.id = s.id"
            )
        with db.registered(con, "seed_facts", pa.Table.from_pylist(facts)):
            con.execute("insert into facts by name select * from seed_facts")
        with db.registered(con, "seed_sources", pa.Table.from_pylist(sources)):
            con.execute("insert into fact_sources by name select * from seed_sources")


def snapshot(con: db.Connection, table: str) -> dict[tuple, tuple]:
    """Every row of a live table keyed by its primary key, all columns."""
    cur = con.execute(f"select * from {table} order by {TABLE_KEYS[table]}")  # noqa: S608 (fixed names)
    names = [d[0] for d in cur.description]
    key_cols = [k.strip() for k in TABLE_KEYS[table].split(",")]
    out = {}
    for row in cur.fetchall():
        rec = dict(zip(names, row, strict=True))
        out[tuple(rec[k] for k in key_cols)] = row
    return out


def live_ids(con: db.Connection, table: str, user_id: str) -> set[str]:
    """Ids of a tenant's live episodes or facts."""
    return {r[0] for r in con.execute(f"select id from {table} where user_id = $u", {"u": user_id}).fetchall()}  # noqa: S608


def archived_ids(con: db.Connection, table: str, user_id: str) -> list[str]:
    """Row ids with an open archive_rows entry (a list: duplicates would show)."""
    return sorted(r[0] for r in con.execute(
        "select row_id from archive_rows where user_id = $u and table_name = $t and restored_at is null",
        {"u": user_id, "t": table}).fetchall())


def parquet_ids(archive_dir: Path, table: str, user_id: str) -> list[str]:
    """Keys found in the archive's parquet files (the ad hoc view), duplicates included."""
    import duckdb

    files = sorted(str(p) for p in (archive_dir / f"table={table}").rglob("*.parquet"))
    if not files:
        return []
    col = "id" if table != "fact_sources" else "fact_id || '|' || episode_id"
    with duckdb.connect() as mem:
        return sorted(r[0] for r in mem.execute(
            f"select {col} from read_parquet($f) where user_id = $u", {"f": files, "u": user_id}).fetchall())  # noqa: S608


def violations(con: db.Connection) -> dict[str, int]:
    """Rows returned by every sql/checks/*.sql (empty = pass)."""
    checks = sorted((Path(__file__).resolve().parents[1] / "sql" / "checks").glob("*.sql"))
    return {p.stem: n for p in checks if (n := len(con.execute(p.read_text()).fetchall()))}
