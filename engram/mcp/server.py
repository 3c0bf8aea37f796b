"""`engram mcp`: an MCP server over stdio or local streamable HTTP (official `mcp` SDK) bound to one tenant.

Arguments are validated against each tool's JSON schema (defaults filled in) before the engram
function runs; every failure comes back as a tool result with is_error=true and structured content
{"error": {"code": <stable code from engram/errors.py>, "message": ...}}, never a stack trace.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server.lowlevel import Server

from engram.errors import EngramError, InvalidInput
from engram.mcp.store_gate import StoreGate
from engram.mcp.tools import listed_schema, BY_NAME, TOOLS, ToolContext
from engram.settings import Settings
from engram.store.tenant import normalise_user_id

log = logging.getLogger("engram.mcp")

SERVER_NAME = "engram"
INSTRUCTIONS = ("Long-term memory. add_memory to remember, search_memory to recall (a reply fits max_tokens), "
                "detailed_help for the parameters, bounds and an example of any tool. Everything is scoped to one "
                "user.")

# Tools that only read the store: they run together; every other call holds the store alone (StoreGate)
READING_TOOLS = frozenset({"search_memory", "memory_stats", "detailed_help", "inner_voice_retrieve"})
# Calls of one client that run at once: a client sending hundreds never takes every worker thread
CALLS_PER_CLIENT = 4
MAX_CLIENTS_KEPT = 256
# How long a stopping server waits for the start-up warm-up (a thread still inside the embedder's or
# DuckDB's native code when the interpreter exits aborts the process: "terminate called ...")
WARM_UP_JOIN_S = 60.0


def _to_json(value: Any) -> Any:
    """A JSON-ready copy (datetimes, numpy scalars and the like become text or numbers)."""
    return json.loads(json.dumps(value, default=str))


def _field_of(err: Any) -> tuple[str, str]:
    """(field path, reason) of a schema validation error; unknown and missing fields are named."""
    path = ".".join(str(p) for p in err.absolute_path)
    if err.validator in ("required", "additionalProperties"):
        names = re.findall(r"'([^']+)'", err.message)
        name = names[0] if names else ""
        reason = "required" if err.validator == "required" else "unknown field (no tool takes a user_id)" \
            if name == "user_id" else "unknown field"
        return ".".join(x for x in (path, name) if x) or "arguments", reason
    return path or "arguments", _capped(err.message)


def _capped(text: str, limit: int = 300) -> str:
    """A schema error's message without the whole offending value (jsonschema quotes it: it may be 1 MB)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


@dataclass
class SharedToolContext(ToolContext):
    """A ToolContext that concurrent calls share: the embedder and the LLM are built once, under a lock."""

    _load_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def embedder(self) -> Any:
        """The configured embedder, built by the first call that needs it."""
        if self._embedder is None:
            with self._load_lock:
                return super().embedder()
        return self._embedder

    def llm(self) -> Any:
        """The configured LLM (None when ENGRAM_LLM=none), built by the first call that needs it."""
        if not self._llm_loaded:
            with self._load_lock:
                return super().llm()
        return self._llm


def _reads_only(name: str, args: dict[str, Any]) -> bool:
    return name in READING_TOOLS or (name == "why" and not args.get("save"))


def _client_of(ctx: Any) -> str:
    """Which client a call comes from: its MCP session id over HTTP (each request has its own session
    object there), one client over stdio."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    found = headers.get("mcp-session-id") if headers is not None else None
    return f"http:{found}" if found else "default"


def _is_mode_clash(exc: BaseException) -> bool:
    """Whether exc is DuckDB refusing a connection whose read-only flag differs from one open in the process."""
    seen: BaseException | None = exc
    while seen is not None:
        if "different configuration than existing connections" in str(seen):
            return True
        seen = seen.__cause__
    return False


class EngramMCP:
    """The tool registry, argument validation, error mapping and call metrics of one server."""

    def __init__(self, settings: Settings, user_id: str) -> None:
        from engram.store.sharding import for_tenant

        if not isinstance(user_id, str) or not user_id.strip() or len(user_id) > 512:
            raise InvalidInput("user: the MCP server needs a non-empty user_id (--user or ENGRAM_MCP_USER_ID)")
        self.settings = settings
        user_id = normalise_user_id(user_id, "user")
        self.ctx = SharedToolContext(for_tenant(settings, user_id), user_id)
        self.schemas = {t.name: t.schema(settings) for t in TOOLS}
        self.validators = {n: Draft202012Validator(s) for n, s in self.schemas.items()}
        self.counters: Counter[str] = Counter()
        self._counters_lock = threading.Lock()
        self.gate = StoreGate()
        self._warm_up: threading.Thread | None = None
        self._per_client: dict[str, anyio.CapacityLimiter] = {}

    def warm_up(self) -> threading.Thread:
        """Load the embedder, the tenant's search indexes and the date parser on a background thread (it
        reads, so searches that arrive meanwhile run beside it; a writing call waits for it)."""
        from engram.query.warm import warm_up, warm_up_in_background

        def run() -> None:
            embedder = self.ctx.embedder()
            with self.gate.reading():
                warm_up(self.ctx.settings, self.ctx.user_id, embedder=embedder)

        self._warm_up = warm_up_in_background(run)
        return self._warm_up

    def finish_warm_up(self, timeout_s: float = WARM_UP_JOIN_S) -> None:
        """Wait (bounded) for the warm-up thread, so none is inside native code when the process exits."""
        if self._warm_up is not None and self._warm_up.is_alive():
            self._warm_up.join(timeout_s)

    def tools(self) -> list[types.Tool]:
        """The tool list with input schemas."""
        return [types.Tool(name=t.name, description=t.description, input_schema=listed_schema(self.schemas[t.name], t.advanced))
                for t in TOOLS]

    def validate(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Arguments checked against the tool schema, defaults filled in; InvalidInput names the field."""
        args = dict(arguments or {})
        errors = sorted(self.validators[name].iter_errors(args), key=lambda e: list(e.absolute_path))
        if errors:
            name_, reason = _field_of(errors[0])
            raise InvalidInput(f"{name_}: {reason}")
        for key, prop in self.schemas[name]["properties"].items():
            if key not in args and "default" in prop:
                args[key] = json.loads(json.dumps(prop["default"]))
        return args

    def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Run one tool call (blocking) and wrap its result or error; calls that only read run concurrently."""
        return self._call(name, arguments)

    def _run(self, name: str, args: dict[str, Any]) -> Any:
        """The handler under the store gate: shared for a read, alone for a write."""
        handler = BY_NAME[name].handler
        if not _reads_only(name, args):
            with self.gate.writing():
                return handler(self.ctx, args)
        try:
            with self.gate.reading():
                return handler(self.ctx, dict(args))
        except Exception as exc:  # a read that had to open the store read-write (a schema to migrate)
            if not _is_mode_clash(exc):
                raise
        with self.gate.writing():
            return handler(self.ctx, args)

    def _call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        started = time.perf_counter()
        code = "ok"
        try:
            args = self.validate(name, arguments)
            out = _to_json(self._run(name, args))
            result = types.CallToolResult(content=[types.TextContent(text=json.dumps(out, ensure_ascii=False))],
                                          structured_content=out)
            count = _count(out)
        except EngramError as exc:
            code, count = exc.code, 0
            result = _error(exc.code, str(exc))
        except Exception as exc:  # noqa: BLE001 - never a stack trace to the client
            code, count = "internal_error", 0
            result = _error("internal_error", f"internal error ({type(exc).__name__}); see the server log")
            if self.settings.debug_content_logging and not self.settings.no_log:
                log.exception("mcp tool %s failed", name)
            elif not self.settings.no_log:
                log.error("mcp tool %s failed: %s", name, type(exc).__name__)
        with self._counters_lock:
            self.counters["calls"] += 1
            self.counters[f"calls.{name}"] += 1
            if code != "ok":
                self.counters["errors"] += 1
                self.counters[f"errors.{code}"] += 1
        if not self.settings.no_log:
            log.info("mcp tool=%s status=%s latency_ms=%.1f count=%d", name, code,
                     (time.perf_counter() - started) * 1000, count)
        return result

    def build(self) -> Server:
        """The SDK server with list_tools / call_tool handlers."""

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.tools())

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            if params.name not in BY_NAME:
                with self._counters_lock:
                    self.counters["errors.unknown_tool"] += 1
                return _error("invalid_params", f"name: unknown tool {params.name!r}; see detailed_help")
            async with self._limiter(_client_of(ctx)):
                return await anyio.to_thread.run_sync(self.call, params.name, params.arguments)

        return Server(SERVER_NAME, version=_version(), instructions=INSTRUCTIONS,
                      on_list_tools=list_tools, on_call_tool=call_tool)

    def _limiter(self, client: str) -> anyio.CapacityLimiter:
        """The client's own cap on calls running at once."""
        limiter = self._per_client.get(client)
        if limiter is None:
            if len(self._per_client) >= MAX_CLIENTS_KEPT:  # forget the caps of clients with nothing running
                for key in [k for k, v in self._per_client.items() if not v.borrowed_tokens]:
                    del self._per_client[key]
            limiter = self._per_client[client] = anyio.CapacityLimiter(CALLS_PER_CLIENT)
        return limiter


def _count(out: Any) -> int:
    """How many items a result carries (for the metrics log line; never content)."""
    if not isinstance(out, dict):
        return 0
    for key in ("count", "inserted"):
        if isinstance(out.get(key), int):
            return out[key]
    for key in ("results", "snippets", "sources", "nodes", "counts", "tools"):
        if isinstance(out.get(key), list):
            return len(out[key])
    return 0


def _error(code: str, message: str) -> types.CallToolResult:
    body = {"error": {"code": code, "message": message}}
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
                                structured_content=body, is_error=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("engram")
    except PackageNotFoundError:
        return "0"


async def serve_stdio(settings: Settings, user_id: str) -> None:
    """Serve the tools over stdin/stdout until the client closes the stream."""
    from engram.mcp.stdio_guard import guarded_stdio

    app = EngramMCP(settings, user_id)
    app.warm_up()
    server = app.build()
    try:
        async with guarded_stdio() as (read, write):  # an unreadable line gets an error reply, not silence
            await server.run(read, write, server.create_initialization_options())
    finally:
        await anyio.to_thread.run_sync(app.finish_warm_up)
        log.info("mcp server stopped: %d call(s), %d error(s)", app.counters["calls"], app.counters["errors"])


def run_stdio(settings: Settings, user_id: str) -> None:
    """Blocking entry point of `engram mcp`."""
    anyio.run(serve_stdio, settings, user_id)


def run_http(settings: Settings, user_id: str, port: int) -> None:
    """Serve the tools over streamable HTTP at http://127.0.0.1:<port>/mcp (loopback only), every request
    checked by engram.mcp.http_guard (bearer token, Origin) and bounded by mcp_request_timeout_s."""
    import uvicorn
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings

    from engram.mcp.http_guard import allowed_origins, guarded, load_token
    from engram.mcp.http_protocol import with_headers_timeout

    origins = allowed_origins(settings.mcp_allowed_origins)
    token = load_token(settings)
    app = EngramMCP(settings, user_id)
    # the SDK checks Host and Origin again (DNS rebinding): its lists agree with the guard's
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                                         allowed_origins=list(origins))
    sdk_app = app.build().streamable_http_app(host="127.0.0.1", transport_security=security,
                                              max_request_body_size=DEFAULT_MAX_REQUEST_BODY_SIZE)
    timeout = settings.mcp_request_timeout_s
    config = uvicorn.Config(guarded(sdk_app, token, settings, DEFAULT_MAX_REQUEST_BODY_SIZE), host="127.0.0.1",
                            port=port, log_level="warning", http=with_headers_timeout(timeout),
                            timeout_keep_alive=timeout)  # type: ignore[arg-type]
    print(f"engram mcp: serving http://127.0.0.1:{port}/mcp for user {app.ctx.user_id}; bearer token in "
          f"{token.where()} (send Authorization: Bearer <token>)", file=sys.stderr, flush=True)
    app.warm_up()
    try:
        uvicorn.Server(config).run()
    finally:
        app.finish_warm_up()
        log.info("mcp server stopped: %d call(s), %d error(s)", app.counters["calls"], app.counters["errors"])
