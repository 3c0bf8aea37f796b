"""A reply to every stdio line the MCP SDK cannot read (nested too deeply, a lone surrogate, not JSON).

The SDK's stdio reader hands such a line's error to the server, which drops it: the client waits for
an answer forever. Here the error becomes a JSON-RPC error reply to the request's id (recovered with
Python's own JSON reader, or from the line's start): -32602 when the line is JSON the SDK refused,
-32700 when it is not JSON at all. Over HTTP the SDK answers these itself.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

PARSE_ERROR, INVALID_PARAMS = -32700, -32602
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


class LastLine:
    """stdin as the SDK's reader iterates it, remembering the line it read last (the one it failed on:
    the reader hands over that line's error before it reads another)."""

    def __init__(self, source: Any) -> None:
        self.source, self.last = source, ""

    def __aiter__(self) -> LastLine:
        return self

    async def __anext__(self) -> str:
        line = await self.source.readline()
        if not line:
            raise StopAsyncIteration
        self.last = line
        return line


def error_reply(line: str) -> types.JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read, addressed to its id when one can be found."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict) and isinstance(value.get("id"), int | str):
        request_id, code = value["id"], INVALID_PARAMS
        message = f"params: {_why(line)}"
    else:
        found = _ID.search(line[:4096])
        request_id = json.loads(found.group(1)) if found else None
        code, message = PARSE_ERROR, f"parse error: {_why(line)}"
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _why(line: str) -> str:
    if re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", line):
        return "contains a lone surrogate (not valid Unicode) or is not valid JSON-RPC"
    if line.count("{") + line.count("[") >= 100:
        return "nested too deeply to read (or not valid JSON-RPC)"
    return "not a valid JSON-RPC message"


@asynccontextmanager
async def guarded_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio_server, with every unreadable line answered instead of dropped."""
    from mcp.server.stdio import stdio_server

    text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    lines = LastLine(anyio.wrap_file(text))
    try:
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
            forward, served = create_context_streams[SessionMessage | Exception](0)

            async def answer_unreadable() -> None:
                async with forward:
                    async for item in read:
                        if isinstance(item, Exception):
                            await write.send(SessionMessage(error_reply(lines.last)))
                        else:
                            await forward.send(item)

            async with anyio.create_task_group() as tg:
                tg.start_soon(answer_unreadable)
                yield served, write
                tg.cancel_scope.cancel()
    finally:
        text.detach()  # sys.stdin's buffer stays open
