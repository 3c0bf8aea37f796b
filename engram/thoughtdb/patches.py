"""Graph patches: a validated list of Thought-DB operations applied as one transaction, undoable.

A patch (from an LLM or a person's JSON file) holds ops: create_node, create_edge, supersede, same_as,
retract, create_summary. Every op needs episode source_refs. The before/after image of every row the
patch creates or changes (facts, fact_sources, nodes, edges) is recorded in graph_patch_changes, so
`rollback` restores the exact prior state; fact changes on both sides are audited in fact_events.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Annotated, Any, Literal

import polars as pl
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engram import clock
from engram.errors import EngramError, InvalidInput
from engram.store import db
from engram.store.fact_ops import FactChange, apply_changes
from engram.text.normalize import content_hash
from engram.thoughtdb import claims, edges, nodes
from engram.thoughtdb.common import (
    CLAIM_TYPES,
    EDGE_TYPES,
    NODE_TYPES,
    SCOPES,
    VISIBILITIES,
    check_source_refs,
    items,
    require,
)

TABLES = ("facts", "fact_sources", "nodes", "edges")
ALIAS_PREFIX = "@"


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source_refs: list[str] = Field(min_length=1, description="Episode ids backing this op (required).")


class CreateNode(_Op):
    """Create a Decision | Action | Summary node; `key` names it for later ops as '@key'."""

    op: Literal["create_node"]
    key: str | None = None
    node_type: Literal[NODE_TYPES]  # type: ignore[valid-type]
    title: str = Field(min_length=1)
    body: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    visibility: Literal[VISIBILITIES] = "project"  # type: ignore[valid-type]
    scope: Literal[SCOPES] = "project"  # type: ignore[valid-type]


class CreateEdge(_Op):
    """Create an edge between existing records (or '@key' of a node made earlier in the patch)."""

    op: Literal["create_edge"]
    edge_type: Literal[tuple(t for t in EDGE_TYPES if t not in edges.MANAGED_TYPES)]  # type: ignore[valid-type]
    from_id: str = Field(min_length=1)
    to_id: str = Field(min_length=1)


class Supersede(_Op):
    """Replace a claim by a new one (supersedes edge, old closed)."""

    op: Literal["supersede"]
    claim_id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    claim_type: Literal[CLAIM_TYPES] | None = None  # type: ignore[valid-type]
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    valid_from: datetime | None = None
    reason: str = "patch supersede"


class SameAs(_Op):
    """Mark a claim as a duplicate of a canonical claim."""

    op: Literal["same_as"]
    duplicate_id: str = Field(min_length=1)
    canonical_id: str = Field(min_length=1)
    reason: str = "patch same_as"


class Retract(_Op):
    """Retract a claim or a node (kept for audit)."""

    op: Literal["retract"]
    id: str = Field(min_length=1)
    reason: str = "patch retract"


class CreateSummary(_Op):
    """A Summary node with a derived_from edge to each covered record."""

    op: Literal["create_summary"]
    key: str | None = None
    title: str = Field(min_length=1)
    body: str | None = None
    covers: list[str] = Field(min_length=1)
    visibility: Literal[VISIBILITIES] = "project"  # type: ignore[valid-type]
    scope: Literal[SCOPES] = "project"  # type: ignore[valid-type]


Op = Annotated[CreateNode | CreateEdge | Supersede | SameAs | Retract | CreateSummary, Field(discriminator="op")]


class GraphPatch(BaseModel):
    """A graph patch: an optional id (default: hash of the ops), a source label, and the ops."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(default=None, min_length=1)
    source: str | None = None
    ops: list[Op] = Field(min_length=1)


def parse_patch(data: dict[str, Any] | str) -> GraphPatch:
    """A GraphPatch from a dict or JSON text; InvalidInput naming the op index and field otherwise."""
    try:
        if isinstance(data, str):
            return GraphPatch.model_validate_json(data)
        return GraphPatch.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            loc = ".".join(str(p) for p in err["loc"] if not (isinstance(p, str) and p in _OP_NAMES))
            problems.append(f"{loc or 'patch'}: {err['msg']}")
        raise InvalidInput("; ".join(problems)) from None


_OP_NAMES = {"create_node", "create_edge", "supersede", "same_as", "retract", "create_summary"}


def patch_id_of(patch: GraphPatch) -> str:
    """The patch's id: the given one, else a hash of its ops."""
    if patch.id:
        return patch.id
    body = json.dumps([o.model_dump(mode="json") for o in patch.ops], sort_keys=True)
    return "patch_" + content_hash(body)[:24]


# ---------------------------------------------------------------- snapshots and images


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _key(table: str, row: dict[str, Any]) -> str:
    if table == "fact_sources":
        return chr(31).join((row["fact_id"], row["episode_id"], row["relation"]))
    return row["id"]


def _snapshot(
    con: db.Connection, user_id: str, ids: Sequence[str], keys: dict[str, list[str]] | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """The tenant's rows a patch may touch (named by `ids`, or by exact `keys` per table), by table then key."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for table in TABLES:
        rows = db.query_arrow(con, f"queries/thoughtdb/patch_snapshot_{table}", user_id=user_id, ids=list(ids),
                              keys=(keys or {}).get(table, [])).to_pylist()
        out[table] = {_key(table, r): r for r in rows}
    return out


def _fingerprints(con: db.Connection, user_id: str) -> dict[str, pl.DataFrame]:
    """(row_key, hash of the row) of every tenant row in the patchable tables; cheap to diff."""
    return {table: db.query(con, f"queries/thoughtdb/patch_fingerprint_{table}", user_id=user_id) for table in TABLES}


def _changed_keys(before: dict[str, pl.DataFrame], after: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Per table, the keys whose row appeared, disappeared or changed, with `existed` (had a row before)."""
    out: dict[str, pl.DataFrame] = {}
    for table in TABLES:
        joined = before[table].join(after[table], on="row_key", how="full", coalesce=True, suffix="_after")
        out[table] = joined.filter(
            pl.col("h").is_null() | pl.col("h_after").is_null() | (pl.col("h") != pl.col("h_after"))
        ).select("row_key", pl.col("h").is_not_null().alias("existed"))
    return out


def _diff(before: dict, after: dict) -> list[dict[str, Any]]:
    """Row changes between two snapshots: (table, key, before, after) with JSON images."""
    changes: list[dict[str, Any]] = []
    for table in TABLES:
        old, new = before[table], after[table]
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key), new.get(key)
            if a != b:
                changes.append({
                    "table_name": table, "row_key": key,
                    "before": None if a is None else json.dumps(a, default=_json_default, sort_keys=True),
                    "after": None if b is None else json.dumps(b, default=_json_default, sort_keys=True),
                })
    for seq, change in enumerate(changes):
        change["seq"] = seq
    return changes


def _decode(schema: pa.Schema, image: dict[str, Any]) -> dict[str, Any]:
    """A JSON row image back to Python values of the table's Arrow schema."""
    row = dict(image)
    for field in schema:
        value = row.get(field.name)
        if value is not None and pa.types.is_timestamp(field.type):
            row[field.name] = datetime.fromisoformat(value)
    return row


# ---------------------------------------------------------------- apply


def _resolve(value: str, aliases: dict[str, str], field: str) -> str:
    if value.startswith(ALIAS_PREFIX):
        name = value[len(ALIAS_PREFIX):]
        if name not in aliases:
            raise InvalidInput(f"{field}: unknown alias {value!r} (no earlier op has key {name!r})")
        return aliases[name]
    return value


def _validate_static(con: db.Connection, user_id: str, patch: GraphPatch) -> None:
    """Check ids and source_refs of every op before anything is written; errors name op index and field."""
    keys: set[str] = set()
    for i, op in enumerate(patch.ops):
        where = f"ops.{i} ({op.op})"
        try:
            check_source_refs(con, user_id, op.source_refs, field="source_refs")
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        refs: list[tuple[str, str, tuple[str, ...]]] = []  # (field, id, allowed kinds)
        if isinstance(op, CreateEdge):
            refs = [("from_id", op.from_id, ("claim", "node", "event")), ("to_id", op.to_id, ("claim", "node", "event"))]
        elif isinstance(op, Supersede):
            refs = [("claim_id", op.claim_id, ("claim",))]
        elif isinstance(op, SameAs):
            refs = [("duplicate_id", op.duplicate_id, ("claim",)), ("canonical_id", op.canonical_id, ("claim",))]
        elif isinstance(op, Retract):
            refs = [("id", op.id, ("claim", "node"))]
        elif isinstance(op, CreateSummary):
            refs = [(f"covers.{j}", c, ("claim", "node", "event")) for j, c in enumerate(op.covers)]
        plain = [r for r in refs if not r[1].startswith(ALIAS_PREFIX)]
        found = items(con, user_id, [r[1] for r in plain])
        for field, value, kinds in refs:
            if value.startswith(ALIAS_PREFIX):
                if value[len(ALIAS_PREFIX):] not in keys:
                    raise InvalidInput(f"{where}: {field}: unknown alias {value!r} (no earlier op has that key)")
                if "node" not in kinds:
                    raise InvalidInput(f"{where}: {field}: {value!r} is a node; a claim is required")
                continue
            if value not in found:
                raise InvalidInput(f"{where}: {field}: unknown id {value!r} for tenant {user_id}")
            kind = found[value]["kind"] if "kind" in found[value] else None
            if kind is not None and kind not in kinds:
                what = "episodes are never changed by a patch" if kind == "event" else f"a {'/'.join(kinds)} is required"
                raise InvalidInput(f"{where}: {field}: {value!r} is a {kind}; {what}")
        if isinstance(op, (CreateNode, CreateSummary)) and op.key:
            if op.key in keys:
                raise InvalidInput(f"{where}: key: {op.key!r} is used by an earlier op")
            keys.add(op.key)


def _candidate_ids(con: db.Connection, user_id: str, patch: GraphPatch) -> list[str]:
    """Every existing id the patch names (and the claims they redirect to): the rows it may change."""
    named: set[str] = set()
    for op in patch.ops:
        if isinstance(op, CreateEdge):
            named |= {op.from_id, op.to_id}
        elif isinstance(op, Supersede):
            named.add(op.claim_id)
        elif isinstance(op, SameAs):
            named |= {op.duplicate_id, op.canonical_id}
        elif isinstance(op, Retract):
            named.add(op.id)
        elif isinstance(op, CreateSummary):
            named |= set(op.covers)
    plain = sorted(i for i in named if not i.startswith(ALIAS_PREFIX))
    redirects = {hop for i in plain for hop in claims.resolve(con, user_id, i)} if plain else set()
    return sorted(set(plain) | redirects)


def _run_op(con: db.Connection, user_id: str, op: Any, aliases: dict[str, str], now: datetime) -> dict[str, Any]:
    """Apply one op inside the caller's transaction; returns the ids it wrote."""
    if isinstance(op, CreateNode):
        node_id = nodes.create_node(con, user_id, op.node_type, op.title, op.source_refs, body=op.body,
                                    valid_from=op.valid_from, valid_to=op.valid_to, visibility=op.visibility,
                                    scope=op.scope, now=now, atomic=False)
        if op.key:
            aliases[op.key] = node_id
        return {"node_id": node_id}
    if isinstance(op, CreateEdge):
        return {"edge_id": edges.create_edge(
            con, user_id, op.edge_type, _resolve(op.from_id, aliases, "from_id"),
            _resolve(op.to_id, aliases, "to_id"), op.source_refs, now=now, atomic=False)}
    if isinstance(op, Supersede):
        return claims.supersede_claim(con, user_id, op.claim_id, op.text, claim_type=op.claim_type,
                                      confidence=op.confidence, source_refs=op.source_refs,
                                      valid_from=op.valid_from, reason=op.reason, now=now, atomic=False)
    if isinstance(op, SameAs):
        return claims.same_as(con, user_id, op.duplicate_id, op.canonical_id, source_refs=op.source_refs,
                              reason=op.reason, now=now, atomic=False)
    if isinstance(op, Retract):
        target = _resolve(op.id, aliases, "id")
        kind = items(con, user_id, [target]).get(target, {}).get("kind")
        if kind == "node":
            return nodes.retract_node(con, user_id, target, now=now, atomic=False)
        return claims.retract_claim(con, user_id, target, reason=op.reason, now=now, atomic=False)
    if isinstance(op, CreateSummary):
        node_id = nodes.create_node(con, user_id, "Summary", op.title, op.source_refs, body=op.body,
                                    visibility=op.visibility, scope=op.scope, now=now, atomic=False)
        if op.key:
            aliases[op.key] = node_id
        edge_ids = [edges.create_edge(con, user_id, "derived_from", node_id, _resolve(c, aliases, "covers"),
                                      op.source_refs, now=now, atomic=False) for c in op.covers]
        return {"node_id": node_id, "edge_ids": edge_ids}
    raise InvalidInput(f"op: unknown operation {op!r}")


class _DryRun(Exception):
    """Raised inside the transaction to discard a dry run's writes."""


def apply_patch(
    con: db.Connection,
    user_id: str,
    patch: GraphPatch | dict[str, Any] | str,
    dry_run: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Validate and apply a patch as one transaction, recording every row change for rollback.

    Any error (op index and field named) leaves the store untouched. A dry run validates and computes
    the changes, then discards them. Applying a patch id twice is refused.
    """
    require(user_id, "user")
    if not isinstance(patch, GraphPatch):
        patch = parse_patch(patch)
    patch_id = patch_id_of(patch)
    now = now or clock.now()
    result: dict[str, Any] = {}

    def work() -> None:
        existing = db.query(con, "queries/thoughtdb/patch_get", user_id=user_id, id=patch_id)
        if existing.height:
            raise InvalidInput(f"id: patch {patch_id!r} was already applied (status {existing['status'][0]})")
        _validate_static(con, user_id, patch)
        candidates = _candidate_ids(con, user_id, patch)
        before = _snapshot(con, user_id, candidates)
        prints = _fingerprints(con, user_id)
        aliases: dict[str, str] = {}
        outputs = []
        for i, op in enumerate(patch.ops):
            try:
                # a distinct microsecond per op keeps run ids and event ids of the ops apart
                outputs.append(_run_op(con, user_id, op, aliases, now + timedelta(microseconds=i)))
            except InvalidInput as exc:
                raise InvalidInput(f"ops.{i} ({op.op}): {exc}") from None
        changed = _changed_keys(prints, _fingerprints(con, user_id))
        for table, frame in changed.items():
            unseen = [k for k, existed in frame.iter_rows() if existed and k not in before[table]]
            if unseen:  # an op changed a row the patch did not name: its before-image is lost, so refuse
                raise EngramError(f"patch: an op changed {table} rows outside the patch's records; nothing applied")
        after = _snapshot(con, user_id, candidates, {t: f["row_key"].to_list() for t, f in changed.items()})
        changes = _diff(before, after)
        ops_json = json.dumps(patch.model_dump(mode="json"), sort_keys=True)
        db.execute(con, "queries/thoughtdb/patch_insert", id=patch_id, user_id=user_id, source=patch.source, now=now,
                   ops=ops_json)
        if changes:
            table = pa.Table.from_pylist(changes, schema=pa.schema([
                ("seq", pa.int32()), ("table_name", pa.string()), ("row_key", pa.string()),
                ("before", pa.string()), ("after", pa.string())]))
            with db.registered(con, "patch_changes", table):
                db.execute(con, "queries/thoughtdb/patch_insert_changes", user_id=user_id, patch_id=patch_id)
        counts: dict[str, dict[str, int]] = {}
        for c in changes:
            kind = "created" if c["before"] is None else "changed"
            counts.setdefault(c["table_name"], {"created": 0, "changed": 0})[kind] += 1
        result.update(patch_id=patch_id, status="dry_run" if dry_run else "applied", n_ops=len(patch.ops),
                      ops=outputs, aliases=aliases, changes=counts)
        if dry_run:
            raise _DryRun

    try:
        with db.transaction(con):
            work()
    except _DryRun:
        pass
    return result


# ---------------------------------------------------------------- rollback


def rollback_patch(con: db.Connection, user_id: str, patch_id: str, now: datetime | None = None) -> dict[str, Any]:
    """Restore every row the patch created or changed to its before-image, in one transaction.

    Fact changes are audited in fact_events (action 'reverted'); refused if the patch is unknown, already
    rolled back, or a row it touched has changed since.
    """
    require(user_id, "user")
    patch_id = require(patch_id, "patch_id")
    now = now or clock.now()
    with db.transaction(con):
        found = db.query(con, "queries/thoughtdb/patch_get", user_id=user_id, id=patch_id)
        if found.height == 0:
            raise InvalidInput(f"patch_id: unknown patch {patch_id!r} for tenant {user_id}")
        if found["status"][0] != "applied":
            raise InvalidInput(f"patch_id: patch {patch_id!r} is already {found['status'][0]}")
        changes = db.query(con, "queries/thoughtdb/patch_changes", user_id=user_id, patch_id=patch_id).to_dicts()
        recorded: dict[str, list[str]] = {}
        for c in changes:
            recorded.setdefault(c["table_name"], []).append(c["row_key"])
        current = _snapshot(con, user_id, [], recorded)
        for c in changes:
            now_row = current[c["table_name"]].get(c["row_key"])
            now_image = None if now_row is None else json.loads(json.dumps(now_row, default=_json_default))
            if now_image != (None if c["after"] is None else json.loads(c["after"])):
                raise InvalidInput(f"patch_id: {c['table_name']} row {c['row_key']!r} changed after the patch; "
                                   "rollback refused")
        # audit rows (status_after: the restored status); the rows themselves come back from the images below
        fact_changes = [
            FactChange(c["row_key"], "reverted", f"rollback patch {patch_id}: created")
            if c["before"] is None else
            FactChange(c["row_key"], "reverted", f"rollback patch {patch_id}: changed",
                       status=json.loads(c["before"])["status"])
            for c in changes if c["table_name"] == "facts"
        ]
        apply_changes(con, user_id, f"rollback-{patch_id}", fact_changes, now)
        for table in TABLES:
            mine = [c for c in changes if c["table_name"] == table]
            if not mine:
                continue
            keys = [c["row_key"] for c in mine]
            if table == "fact_sources":
                db.execute(con, "queries/thoughtdb/patch_delete_fact_sources", user_id=user_id, keys=keys)
            else:
                db.execute(con, f"queries/thoughtdb/patch_delete_{table}", user_id=user_id, ids=keys)
            images = [json.loads(c["before"]) for c in mine if c["before"] is not None]
            if images:
                schema = db.query_arrow(con, f"queries/thoughtdb/patch_snapshot_{table}", user_id=user_id, ids=[],
                                        keys=[]).schema
                restore = pa.Table.from_pylist([_decode(schema, r) for r in images], schema=schema)
                with db.registered(con, "patch_restore", restore):
                    db.execute(con, f"queries/thoughtdb/patch_restore_{table}", user_id=user_id)
        db.execute(con, "queries/thoughtdb/patch_mark_rolled_back", user_id=user_id, id=patch_id, now=now)
    summary: dict[str, dict[str, int]] = {}
    for c in changes:
        kind = "removed" if c["before"] is None else "restored"
        summary.setdefault(c["table_name"], {"removed": 0, "restored": 0})[kind] += 1
    return {"patch_id": patch_id, "status": "rolled_back", "changes": summary}


def get_patch(con: db.Connection, user_id: str, patch_id: str) -> dict[str, Any]:
    """One patch with its ops and recorded change count; InvalidInput naming patch_id if unknown."""
    found = db.query(con, "queries/thoughtdb/patch_get", user_id=user_id, id=patch_id)
    if found.height == 0:
        raise InvalidInput(f"patch_id: unknown patch {patch_id!r} for tenant {user_id}")
    row = found.to_dicts()[0]
    row["ops"] = json.loads(row["ops"]) if isinstance(row["ops"], str) else row["ops"]
    return row


def list_patches(con: db.Connection, user_id: str, limit: int = 50) -> list[dict[str, Any]]:
    """The tenant's patches, newest first."""
    require(user_id, "user")
    if limit < 1:
        raise InvalidInput("limit: must be >= 1")
    return db.query(con, "queries/thoughtdb/patch_list", user_id=user_id, limit=limit).to_dicts()

