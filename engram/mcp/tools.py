"""The MCP tools of engram: JSON schemas (bounds and defaults from Settings), help texts and handlers.

Every handler takes (ctx, args) where ctx is the server's ToolContext (settings routed to the bound
tenant's shard, cached embedder/LLM) and args are already validated against the tool's schema with
defaults filled in. No tool takes a user_id: the tenant is the one the server was started for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engram.errors import EmbedderUnavailable, FeatureDisabled, InvalidInput
from engram.settings import Settings
from engram.store import db
from engram.store.ingest import KINDS, MAX_CONTENT_CHARS, ORIGINS, VISIBILITIES

MAX_EPISODES = 1000        # episodes per add_memory call
MAX_IDS = 1000             # ids per moderation / maintenance call
MAX_QUERY_CHARS = 4000     # query text of search / retrieve / ask


@dataclass
class ToolContext:
    """What a tool call runs against: the bound tenant, its settings, lazily built embedder and LLM."""

    settings: Settings
    user_id: str
    _embedder: Any = None
    _llm: Any = None
    _llm_loaded: bool = False

    def embedder(self) -> Any:
        """The configured embedder, built on first use."""
        if self._embedder is None:
            from engram import embed as embedders

            self._embedder = embedders.from_settings(self.settings)
        return self._embedder

    def llm(self) -> Any:
        """The configured LLM (None when ENGRAM_LLM=none), built on first use."""
        if not self._llm_loaded:
            from engram import llm as llms

            self._llm = llms.from_settings(self.settings)
            self._llm_loaded = True
        return self._llm


@dataclass
class ToolSpec:
    """One tool: name, one-line description, detailed help, schema builder and handler."""

    name: str
    description: str
    help: str
    schema: Callable[[Settings], dict[str, Any]]
    handler: Callable[[ToolContext, dict[str, Any]], Any]
    example: dict[str, Any] = field(default_factory=dict)
    # parameters a call seldom needs: accepted and shown by detailed_help, left out of tools/list
    advanced: tuple[str, ...] = ()


# ---- schema helpers

# Left out of the schemas tools/list shows (every conversation of an MCP host carries that list): the
# server validates every call against the full schema, and detailed_help shows it
UNLISTED = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum",
                      "additionalProperties", "description"})


def listed_schema(schema: dict[str, Any], advanced: tuple[str, ...] = ()) -> dict[str, Any]:
    """The schema as tools/list shows it: names, types, enums, defaults and what is required; descriptions,
    bounds, defaults that are off or empty, and the fields of nested objects are left to detailed_help (a call that breaks a bound is
    refused with the field named); so are the `advanced` parameters."""
    props = {k: _listed_field(v) for k, v in schema["properties"].items() if k not in advanced}
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = schema["required"]
    return out


def _listed_field(field: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in field.items() if k not in UNLISTED and k not in ("properties", "required")}
    if out.get("default") is False or out.get("default") == []:  # off or empty when left out: detailed_help says
        out.pop("default", None)
    if isinstance(out.get("items"), dict):
        out["items"] = {"type": out["items"].get("type", "object")}
    return out


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    # a field named for what it is goes without a description: the tool list is in every conversation's context
    props = {k: {x: y for x, y in v.items() if not (x == "description" and not y)} for k, v in props.items()}
    return {"type": "object", "properties": props, "required": required or [], "additionalProperties": False}


def _text(desc: str, max_len: int = MAX_QUERY_CHARS) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_len, "description": desc}


def _int(desc: str, lo: int, hi: int, default: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": lo, "maximum": hi, "description": desc}
    if default is not None:
        out["default"] = default
    return out


def _unit(desc: str, default: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "number", "minimum": 0.0, "maximum": 1.0, "description": desc}
    if default is not None:
        out["default"] = default
    return out


def _bool(desc: str, default: bool) -> dict[str, Any]:
    return {"type": "boolean", "default": default, "description": desc}


def _ids(desc: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 512},
            "maxItems": MAX_IDS, "default": [], "description": desc}


def _tags(desc: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200},
            "maxItems": 100, "description": desc}


def _time(desc: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": 64, "description": desc + " (ISO 8601, UTC if no zone)"}


def _parse_time(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{name}: not an ISO 8601 time: {value!r}") from None


# ---- add_memory

_EPISODE_FIELDS: dict[str, Any] = {
    "content": _text("The text to remember (a message, note or thought).", MAX_CONTENT_CHARS),
    "role": {"type": "string", "maxLength": 512, "description": "Speaker, e.g. user or assistant."},
    "session_id": {"type": "string", "maxLength": 512, "description": "Conversation/session id."},
    "created_at": _time("When it was said (default: now)"),
    "kind": {"type": "string", "enum": sorted(KINDS), "default": "turn", "description": "turn | thought | event."},
    "origin": {"type": "string", "enum": sorted(ORIGINS), "default": "human", "description": "Who produced it."},
    "visibility": {"type": "string", "enum": sorted(VISIBILITIES), "description": "private | project | global "
                   "(default project, or private when is_private)."},
    "is_private": _bool("Private rows are only returned when a search asks for include_private.", False),
    "tags": _tags("Free tags for filtering."),
    "metadata": {"type": "object", "description": "Any JSON object stored with the episode."},
}


def _add_memory_schema(settings: Settings) -> dict[str, Any]:
    single = dict(_EPISODE_FIELDS)
    single["episodes"] = {"type": "array", "minItems": 1, "maxItems": MAX_EPISODES,
                          "items": _obj(_EPISODE_FIELDS, ["content"]),
                          "description": "Several episodes at once (instead of content)."}
    return _obj(single)


def _add_memory(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    from engram.store.ingest import add_episodes

    episodes = args.pop("episodes", None)
    if episodes is not None and args.get("content") is not None:
        raise InvalidInput("episodes: give either content or episodes, not both")
    if episodes is None:
        if args.get("content") is None:
            raise InvalidInput("content: required (or give episodes)")
        episodes = [{k: v for k, v in args.items() if k in _EPISODE_FIELDS}]
    records = [{**{k: v for k, v in e.items() if v is not None}, "user_id": ctx.user_id} for e in episodes]
    out: dict[str, Any] = {}
    vectors, model = _own_vectors(ctx, records, out)
    result = add_episodes(records, ctx.settings, user_id=ctx.user_id, embeddings=vectors, embedding_model=model)
    stored = result.inserted + result.queued
    return {"received": result.received, "inserted": result.inserted, "queued": result.queued,
            "duplicates": result.duplicates, "ids": result.ids, "embedded": stored if vectors is not None else 0,
            **out}


def _own_vectors(ctx: ToolContext, records: list[dict[str, Any]], out: dict[str, Any]) -> tuple[Any, str | None]:
    """Vectors of this write's own texts when it holds at most settings.embed_on_write of them; never the
    tenant's backlog (the embedding worker's job). A failing embedder leaves them to the queue, with a
    warning in `out`."""
    if not records or len(records) > ctx.settings.embed_on_write:
        return None, None
    try:
        embedder = ctx.embedder()
        return embedder.embed([str(r.get("content", "")) for r in records]), embedder.model
    except EmbedderUnavailable as exc:  # the rows are stored; they stay queued for `engram embed`
        out["warning"] = {"code": exc.code, "message": f"stored but not embedded yet: {exc}"}
        return None, None


# ---- search_memory

def _search_schema(s: Settings) -> dict[str, Any]:
    return _obj({
        "query": _text("What to look for."),
        "max_tokens": _int("Token budget of this reply.", 1, 1_000_000, s.max_tokens),
        "search_type": {"type": "string", "enum": ["facts", "episodes", "both"], "default": "both"},
        "limit": _int("Cap on the count.", 1, 100),
        "as_of": _time("Answer as of"),
        "method": {"type": "string", "enum": ["hybrid", "vector", "lexical"], "default": "hybrid"},
        "include_private": _bool("", False),
        "include_sources": _bool("Source texts too.", False),
        "explain": _bool("Score parts too.", False),
        "include_tags": _tags(""),
        "exclude_tags": _tags(""),
    }, ["query"])


def _search(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    import json

    from engram.query.search import search_memory

    packed = search_memory(a["query"], search_type=a["search_type"], limit=a.get("limit"), user_id=ctx.user_id,
                           as_of=a.get("as_of"), settings=ctx.settings, method=a["method"],
                           include_private=a["include_private"], include_tags=a.get("include_tags"),
                           exclude_tags=a.get("exclude_tags"), embedder=ctx.embedder(),
                           max_tokens=a["max_tokens"], include_sources=a["include_sources"],
                           explain=a["explain"], render="json")
    return json.loads(packed.payload)  # sent as the very text the budget was counted on


# ---- inner_voice, inner_voice_retrieve, ask

def _inner_voice_schema(s: Settings) -> dict[str, Any]:
    return _obj({
        "content": _text("The thought or question to reflect on."),
        "top_k": _int("Thoughts to use.", 1, 50, s.top_k),
        "sim_thresh": _unit("Minimum cosine of a thought.", s.sim_thresh),
        "stage_kg": _bool("Stage knowledge-graph entity/edge candidates for knowledgegraph_moderate.", False),
        "confidence_min": _unit("Minimum confidence of staged candidates.", 0.6),
        "max_nodes": _int("Cap on staged entities.", 0, 10_000, 30),
        "max_edges": _int("Cap on staged edges.", 0, 10_000, 60),
        "save": _bool("Save the answer as a summary thought.", True),
        "auto_mark_removal": _bool("Mark the source thoughts for removal.", s.auto_mark_removal),
    }, ["content"])


def _inner_voice(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    from engram.query.inner_voice import inner_voice

    return inner_voice(a["content"], a["top_k"], a["sim_thresh"], a["stage_kg"], a["confidence_min"],
                       a["max_nodes"], a["max_edges"], a["save"], a["auto_mark_removal"],
                       user_id=ctx.user_id, settings=ctx.settings, embedder=ctx.embedder())


def _retrieve_schema(s: Settings) -> dict[str, Any]:
    return _obj({
        "query": _text("What to look for."),
        "top_k": _int("Snippets to return.", 1, 50, s.retrieve_top_k),
        "max_tokens": _int("Token budget of this reply.", 1, 1_000_000, s.max_tokens),
        "floor": _unit("Similarity floor (default: adaptive, never below ENGRAM_MIN_FLOOR)."),
        "mix": _unit("Share of slots given to the knowledge graph.", s.inner_voice_mix),
        "include_private": _bool("Also return private rows.", False),
        "include_tags": _tags("Only rows with any of these tags."),
        "exclude_tags": _tags("Drop rows with any of these tags."),
    }, ["query"])


def _retrieve(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    from engram.query.retrieve import retrieve

    if not ctx.settings.enable_inner_voice:  # checked before the embedder loads
        raise FeatureDisabled("retrieve is disabled: set ENGRAM_ENABLE_INNER_VOICE=true to enable it")
    return retrieve(a["query"], a["top_k"], a.get("floor"), a["mix"], a["include_private"],
                    a.get("include_tags"), a.get("exclude_tags"), user_id=ctx.user_id, settings=ctx.settings,
                    embedder=ctx.embedder(), max_tokens=a["max_tokens"])


def _ask_schema(s: Settings) -> dict[str, Any]:
    return _obj({
        "query": _text("The question."),
        "session": {"type": "string", "minLength": 1, "maxLength": 200,
                    "description": "Continue this session (the session_id of an earlier answer)."},
    }, ["query"])


def _ask(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    from engram.query.ask import ask

    llm = ctx.llm()
    if llm is None:
        raise FeatureDisabled("ask needs an LLM and ENGRAM_LLM=none: set ENGRAM_LLM=gemini (answers are never "
                              "made up without one)")
    return ask(a["query"], a.get("session"), user_id=ctx.user_id, settings=ctx.settings, llm=llm,
               embedder=ctx.embedder())


# ---- maintenance_ops

MAINTENANCE_OPS = ("list_removal_candidates", "export_removals", "finalize_removal", "restore")


def _maintenance_schema(s: Settings) -> dict[str, Any]:
    return _obj({
        "op": {"type": "string", "enum": list(MAINTENANCE_OPS), "description": "The maintenance operation."},
        "table": {"type": "string", "enum": ["episodes", "facts", "fact_sources"],
                  "description": "Only this table (fact_sources only for restore)."},
        "status": {"type": "string", "minLength": 1, "maxLength": 64,
                   "description": "Only rows retired with this status, e.g. deprecated (list/export)."},
        "older_than_days": _int("Age of the status change in days (list/export).", 0, 3650, s.retention_days),
        "as_of": _time("Reference time for list/export (default now)"),
        "sample": _int("Sample ids per table (list).", 0, 1000, 5),
        "run_id": {"type": "string", "minLength": 1, "maxLength": 200,
                   "description": "export: run id put in file names; finalize: only exports of this run; "
                                  "restore: only rows archived by this export run."},
        "export_ids": _ids("finalize: only these exports."),
        "ids": _ids("restore: only these row ids (default: every archived row the other filters pick)."),
        "dry_run": _bool("Show what would happen; write nothing. Defaults to true: pass false to act.", True),
    }, ["op"])


def _maintenance(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    from engram.archive import ops as archive
    from engram.archive.restore import restore

    op, s, u = a["op"], ctx.settings, ctx.user_id
    if a.get("table") == "fact_sources" and op != "restore":
        raise InvalidInput("table: fact_sources only for restore (they follow their facts otherwise)")
    as_of = _parse_time(a.get("as_of"), "as_of")
    if op == "list_removal_candidates":
        return archive.list_removal_candidates(s, u, a.get("table"), a.get("status"), a["older_than_days"],
                                               as_of, a["sample"])
    if op == "export_removals":
        return archive.export_removals(s, u, a.get("table"), a.get("status"), a["older_than_days"], as_of,
                                       a.get("run_id"), dry_run=a["dry_run"])
    if op == "finalize_removal":
        return archive.finalize_removal(s, u, run_id=a.get("run_id"), export_ids=a["export_ids"] or None,
                                        dry_run=a["dry_run"])
    return restore(s, u, table=a.get("table"), ids=a["ids"] or None, export_run_id=a.get("run_id"),
                           dry_run=a["dry_run"])


# ---- knowledgegraph_moderate

def _moderate_schema(s: Settings) -> dict[str, Any]:
    return _obj({
        "approve": _ids("Candidate ids (entity or edge) to approve into the knowledge graph."),
        "reject": _ids("Candidate ids to reject."),
        "mark_removal": _bool("Mark source thoughts with no pending candidates left for removal.", False),
        "limit": _int("With no ids: how many pending candidates to list.", 1, 1000, 100),
    })


def _moderate(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    from engram.thoughtdb import kg_moderation

    with db.open_store(ctx.settings) as con:
        if not a["approve"] and not a["reject"]:
            return {"pending": kg_moderation.list_candidates(con, ctx.user_id, "pending", a["limit"])}
        return kg_moderation.moderate(con, ctx.user_id, a["approve"], a["reject"], a["mark_removal"])


# ---- why

def _why_schema(s: Settings) -> dict[str, Any]:
    return _obj({
        "kind": {"type": "string", "enum": ["claim", "node", "event"], "description": "What the id is."},
        "id": _text("Id of the claim, node or event to explain.", 512),
        "as_of": _time("Explain the state at this time (default now)"),
        "depth": _int("How many support hops to follow.", 0, 50, 5),
        "max_nodes": _int("Cap on records visited.", 1, 10_000, 200),
        "include_private": _bool("Include private records in the trace.", False),
        "save": _bool("Save the trace as a node.", False),
    }, ["kind", "id"])


def _why(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    from engram.thoughtdb import why

    with db.open_store(ctx.settings, read_only=not a["save"]) as con:
        result = why.trace(con, ctx.user_id, a["kind"], a["id"], a.get("as_of"), a["depth"], a["max_nodes"],
                           include_private=a["include_private"], llm=ctx.llm())
        if a["save"]:
            result["saved_node_id"] = why.save_trace(con, ctx.user_id, result)
    return result


# ---- memory_stats

def _stats(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:

    from engram.store.stats import counts as tenant_counts

    found = tenant_counts(ctx.settings, ctx.user_id)  # the read snapshot while the night holds the store
    counts = [{"table": t, "status": st, "n": int(n)} for t, _u, st, n in found.rows]
    totals: dict[str, int] = {}
    for c in counts:
        totals[c["table"]] = totals.get(c["table"], 0) + c["n"]
    return {"user_id": ctx.user_id, "totals": totals, "counts": counts, **found.as_dict()}


# ---- detailed_help

def _help_schema(s: Settings) -> dict[str, Any]:
    return _obj({"tool": {"type": "string", "enum": [t.name for t in TOOLS],
                          "description": "The tool to explain (default: an overview of all tools)."}})


def _help(ctx: ToolContext, a: dict[str, Any]) -> dict[str, Any]:
    import json

    if a.get("tool") is None:
        return {"user_id": ctx.user_id, "tools": [{"name": t.name, "description": t.description} for t in TOOLS]}
    t = BY_NAME[a["tool"]]
    schema = t.schema(ctx.settings)
    params = [
        {"name": k, "type": v.get("type", "object"), "required": k in schema["required"],
         **{x: v[x] for x in ("default", "minimum", "maximum", "enum", "maxLength", "maxItems") if x in v},
         "description": v.get("description", "")}
        for k, v in schema["properties"].items()
    ]
    return {"tool": t.name, "description": t.description, "help": t.help, "parameters": params,
            "example": {"name": t.name, "arguments": t.example},
            "example_json": json.dumps({"name": t.name, "arguments": t.example})}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "add_memory", "Remember something: append one episode (content) or several (episodes) and embed them.",
        "Appends raw episodes for your user. They are searchable at once (episodes) and become consolidated "
        "facts after the nightly run. Give `content` (plus optional role, session_id, created_at, kind, origin, "
        "visibility, is_private, tags, metadata) or `episodes` (a list of such objects). Returns the ids, how "
        "many were inserted, how many were duplicates (same text and time) and how many were embedded (a write "
        "of up to ENGRAM_EMBED_ON_WRITE episodes, 16 by default, is embedded with them; a larger one, and any "
        "backlog, by the embedding worker: a write never waits for others' rows). If the embedder is down the rows are still stored and a warning with code embedder_unavailable is returned.",
        _add_memory_schema, _add_memory,
        {"content": "I moved to Lisbon in March and started learning Portuguese.", "role": "user",
         "session_id": "s1"},
        ("origin", "metadata"),
    ),
    ToolSpec(
        "search_memory", "Search memories (facts and what was said) for a query; the best that fit max_tokens.",
        "Hybrid (BM25 + vector) search over your consolidated facts and/or raw episodes (search_type: facts | "
        "episodes | both). The reply is JSON of at most max_tokens tokens (default ENGRAM_MAX_TOKENS), counted "
        "on this very text: results (id, type, role of an episode, date, until when replaced, status when not "
        "current, text: a long episode as its passage that matches the query; a fact's first source id), "
        "count, tokens, omitted (matches that did not fit) and reason (why nothing is shown). limit caps the "
        "count. include_sources adds the source episodes' dates and passages, explain the score parts and "
        "hashes, both inside the same budget. as_of answers from facts valid at that time.",
        _search_schema, _search, {"query": "Where does the user live?", "max_tokens": 400},
        ("method", "include_tags", "exclude_tags"),
    ),
    ToolSpec(
        "inner_voice", "Reflect: RAG over your thoughts, an answer with sources, optionally saved and KG-staged.",
        "Finds the thoughts most similar to `content` (cosine >= sim_thresh), writes an extractive answer with "
        "its sources, saves it as a summary thought (save) and can stage knowledge-graph candidates (stage_kg) "
        "for knowledgegraph_moderate. Needs ENGRAM_ENABLE_INNER_VOICE=true (else feature_disabled).",
        _inner_voice_schema, _inner_voice, {"content": "What have I concluded about the move?", "top_k": 5},
        ("sim_thresh", "confidence_min", "max_nodes", "max_edges", "auto_mark_removal"),
    ),
    ToolSpec(
        "inner_voice_retrieve", "Retrieve-only snippets with provenance, trust tier and diagnostics (no answer).",
        "The retrieve-only spec (inner_voice.retrieve): up to top_k snippets {id, table, source_type, origin, "
        "trust_tier, score, text, ...} mixed from the knowledge graph (share `mix`) and memories, above an "
        "adaptive similarity floor, plus diagnostics {k_req, k_ret, floor_used, latency_ms, reason}. Needs "
        "ENGRAM_ENABLE_INNER_VOICE=true (else feature_disabled).",
        _retrieve_schema, _retrieve, {"query": "Portuguese lessons", "top_k": 8},
        ("floor", "mix", "include_tags", "exclude_tags"),
    ),
    ToolSpec(
        "ask", "A grounded answer citing at least 2 facts, or a refusal with the reason.",
        "Answers from your facts and knowledge graph with verified quotes; refuses (refused=true, reason) when "
        "the evidence is too thin. Needs an LLM (ENGRAM_LLM=gemini); with ENGRAM_LLM=none it returns "
        "feature_disabled. Pass the returned session_id as `session` to continue a conversation.",
        _ask_schema, _ask, {"query": "Which city did I move to and when?"},
    ),
    ToolSpec(
        "maintenance_ops", "Archive maintenance: list/export removal candidates, finalize removal, restore.",
        "op=list_removal_candidates: what the archive would take now (counts, sample ids). "
        "op=export_removals: write rows due to verified parquet files (live rows untouched). "
        "op=finalize_removal: delete from the live tables the rows of verified exports. "
        "op=restore: bring archived rows back. Everything is limited to your user. dry_run defaults to TRUE: "
        "pass dry_run=false to write.",
        _maintenance_schema, _maintenance, {"op": "list_removal_candidates", "older_than_days": 30},
        ("sample", "as_of"),
    ),
    ToolSpec(
        "knowledgegraph_moderate", "Approve or reject staged knowledge-graph candidates (no ids: list pending).",
        "Approving an entity candidate creates (or extends) the knowledge-graph entity; approving an edge "
        "candidate creates its endpoints and relation. All or nothing: an unknown id, an id in both lists, or "
        "flipping an earlier decision returns invalid_params and writes nothing. Called without ids it lists "
        "the pending candidates (entities and edges) so you can pick ids.",
        _moderate_schema, _moderate, {"approve": ["kgc_123"], "reject": ["kgc_456"]},
    ),
    ToolSpec(
        "why", "Root-cause trace: why a claim, node or event is believed, with supports as of a time.",
        "Follows the support links of a claim, node or event (depth hops, at most max_nodes records) and "
        "returns the trace: the record, its supports and contradictions valid at as_of, and the paths back to "
        "source episodes. save=true stores the trace as a node.",
        _why_schema, _why, {"kind": "claim", "id": "clm_123", "depth": 3},
        ("depth", "max_nodes", "save"),
    ),
    ToolSpec(
        "memory_stats", "Row counts of your memory per table and status.",
        "Counts of your episodes, facts, fact sources, fact events and LLM reviews, per status, plus totals "
        "per table. Takes no parameters.",
        lambda s: _obj({}), _stats, {},
    ),
    ToolSpec(
        "detailed_help", "Detailed help for a tool: what it does, parameters with bounds/defaults, an example.",
        "Without `tool`: the list of tools. With `tool`: its help text, every parameter (type, default, bounds, "
        "description) and an example call.",
        _help_schema, _help, {"tool": "search_memory"},
    ),
]

BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
