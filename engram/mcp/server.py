"""`engram mcp`: an MCP server over stdio or local streamable HTTP (official `mcp` SDK) bound to one tenant.

Arguments are validated against each tool's JSON schema (defaults filled in) before the engram
function runs; every failure comes back as a tool result with is_error=true and structured content
{"error": {"code": <stable code from engram/errors.py>, "message": ...}}, never a stack trace.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server.lowlevel import Server

from engram.errors import EngramError, InvalidInput
from engram.mcp.tools import listed_schema, BY_NAME, TOOLS, ToolContext
from engram.settings import Settings
from engram.store.tenant import normalise_user_id

log = logging.getLogger("engram.mcp")

SERVER_NAME = "engram"
INSTRUCTIONS = ("Long-term memory. add_memory to remember, search_memory to recall (a reply fits max_tokens), "
                "detailed_help for the parameters, bounds and an example of any tool. Everything is scoped to one "
                "user.")


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


class EngramMCP:
    """The tool registry, argument validation, error mapping and call metrics of one server."""

    def __init__(self, settings: Settings, user_id: str) -> None:
        from engram.store.sharding import for_tenant

        if not isinstance(user_id, str) or not user_id.strip() or len(user_id) > 512:
            raise InvalidInput("user: the MCP server needs a non-empty user_id (--user or ENGRAM_MCP_USER_ID)")
        self.settings = settings
        user_id = normalise_user_id(user_id, "user")
        self.ctx = ToolContext(for_tenant(settings, user_id), user_id)
        self.schemas = {t.name: t.schema(settings) for t in TOOLS}
        self.validators = {n: Draft202012Validator(s) for n, s in self.schemas.items()}
        self.counters: Counter[str] = Counter()
        self._lock = threading.Lock()

    def warm_up(self) -> threading.Thread:
        """Load the embedder, the tenant's search indexes and the date parser on a background thread (a
        tool call that arrives meanwhile waits for it: calls run one at a time)."""
        from engram.query.warm import warm_up, warm_up_in_background

        def run() -> None:
            with self._lock:
                warm_up(self.ctx.settings, self.ctx.user_id, embedder=self.ctx.embedder())

        return warm_up_in_background(run)

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
        """Run one tool call (blocking) and wrap its result or error."""
        with self._lock:  # one call at a time: DuckDB connections and the lazy embedder are per process
            return self._call(name, arguments)

    def _call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        started = time.perf_counter()
        code = "ok"
        try:
            args = self.validate(name, arguments)
            out = _to_json(BY_NAME[name].handler(self.ctx, args))
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
                self.counters["errors.unknown_tool"] += 1
                return _error("invalid_params", f"name: unknown tool {params.name!r}; see detailed_help")
            return await anyio.to_thread.run_sync(self.call, params.name, params.arguments)

        return Server(SERVER_NAME, version=_version(), instructions=INSTRUCTIONS,
                      on_list_tools=list_tools, on_call_tool=call_tool)


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
        log.info("mcp server stopped: %d call(s), %d error(s)", app.counters["calls"], app.counters["errors"])


def run_stdio(settings: Settings, user_id: str) -> None:
    """Blocking entry point of `engram mcp`."""
    anyio.run(serve_stdio, settings, user_id)


def run_http(settings: Settings, user_id: str, port: int) -> None:
    """Serve the tools over streamable HTTP at http://127.0.0.1:<port>/mcp (loopback only)."""
    import uvicorn

    app = EngramMCP(settings, user_id)
    app.warm_up()
    try:
        uvicorn.run(app.build().streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=port,
                    log_level="warning")
    finally:
        log.info("mcp server stopped: %d call(s), %d error(s)", app.counters["calls"], app.counters["errors"])
