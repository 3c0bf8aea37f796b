"""The gate in front of `engram mcp --http`: Origin allow-list, bearer token, and a deadline on the request body.

Every HTTP request passes here before the MCP SDK sees it. A request with an Origin header (a browser
page) is refused with 403 unless that origin is listed in ENGRAM_MCP_ALLOWED_ORIGINS; a request without
the server's bearer token is refused with 401. The body is then read in full within
mcp_request_timeout_s (408 when it is slower) so a client that hangs up mid-body costs one log line,
not a traceback from the SDK's request reader.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.errors import InvalidInput
from engram.settings import Settings

log = logging.getLogger("engram.mcp")

TOKEN_SUFFIX = ".mcp-token"
_ORIGIN = re.compile(r"^[a-z][a-z0-9+.-]*://[^/\s?#]+$")


@dataclass(frozen=True)
class Token:
    """The bearer token every HTTP request must carry, and where it came from (never printed)."""

    value: str
    path: Path | None  # None: ENGRAM_MCP_TOKEN

    def where(self) -> str:
        """Where a host finds the token, for the start-up line (a file path or the variable's name)."""
        return str(self.path) if self.path is not None else "ENGRAM_MCP_TOKEN"


def token_path(settings: Settings) -> Path:
    """The token file beside the store: <db_path>.mcp-token."""
    return Path(f"{settings.db_path}{TOKEN_SUFFIX}")


def load_token(settings: Settings) -> Token:
    """settings.mcp_token, else the token file beside the store (created 0600 on first start, reused after)."""
    if settings.mcp_token is not None:
        value = settings.mcp_token.get_secret_value().strip()
        if not value:
            raise InvalidInput("mcp_token: ENGRAM_MCP_TOKEN is set but empty")
        return Token(value, None)
    path = token_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return Token(_read_private(path), path)
    value = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(value + "\n")
    return Token(value, path)


def _read_private(path: Path) -> str:
    """The token in an existing file, refused when others may read it or another user owns it."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"mcp token file {path}: not a regular file")
    if info.st_mode & 0o077:
        raise InvalidInput(f"mcp token file {path}: readable by group or others (mode "
                           f"{stat.S_IMODE(info.st_mode):04o}); run `chmod 600 {path}` or remove it for a new one")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise InvalidInput(f"mcp token file {path}: owned by another user")
    value = path.read_text(encoding="ascii", errors="replace").strip()
    if not value:
        raise InvalidInput(f"mcp token file {path}: empty; remove it and start again for a new one")
    return value


def normalise_origin(origin: str) -> str:
    """An origin as compared: lower case, no trailing slash."""
    return origin.strip().rstrip("/").lower()


def allowed_origins(listed: str) -> tuple[str, ...]:
    """The origins of settings.mcp_allowed_origins (comma-separated), normalised; InvalidInput names a bad one."""
    out: list[str] = []
    for item in listed.split(","):
        if not item.strip():
            continue
        origin = normalise_origin(item)
        if not _ORIGIN.match(origin):
            raise InvalidInput(f"mcp_allowed_origins: {item.strip()!r} is not an origin (scheme://host[:port])")
        out.append(origin)
    return tuple(dict.fromkeys(out))


class HTTPGuard:
    """ASGI middleware: Origin, then bearer token, then the body within the deadline; only then the app."""

    def __init__(self, app: ASGIApp, token: str, origins: tuple[str, ...], body_timeout_s: float,
                 max_body_size: int) -> None:
        self.app, self.origins = app, frozenset(origins)
        self._token = token.encode()
        self.body_timeout_s, self.max_body_size = body_timeout_s, max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # websockets: not an MCP transport
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None:
            if normalise_origin(origin) not in self.origins:
                await _reply(send, 403, "forbidden_origin",
                             "origin: not listed in ENGRAM_MCP_ALLOWED_ORIGINS")
                return
            scope = _with_origin(scope, normalise_origin(origin))  # as the SDK's exact-match check lists it
        if not self._authorised(headers.get("authorization")):
            await _reply(send, 401, "unauthorized", "authorization: a valid bearer token is required "
                         "(Authorization: Bearer <token>; see docs/mcp.md)",
                         [(b"www-authenticate", b'Bearer realm="engram"')])
            return
        body = await self._read_body(receive, send)
        if body is None:
            return
        replay: list[Message] = [body]

        async def replayed() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)

    def _authorised(self, header: str | None) -> bool:
        scheme, _, given = (header or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), self._token)

    async def _read_body(self, receive: Receive, send: Send) -> Message | None:
        """The whole body as one message, or None when the request was answered here or the client left."""
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.body_timeout_s) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    log.info("mcp http: client hung up before its request was read")
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body_size:
                    await _reply(send, 413, "invalid_params", f"body: larger than {self.max_body_size} bytes",
                                 [(b"connection", b"close")])
                    return None
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            log.info("mcp http: request body not received within %.1f s; connection closed", self.body_timeout_s)
            await _reply(send, 408, "request_timeout",
                         f"body: not received within {self.body_timeout_s:g} s (ENGRAM_MCP_REQUEST_TIMEOUT_S)",
                         [(b"connection", b"close")])
            return None
        return {"type": "http.request", "body": b"".join(chunks), "more_body": False}


def _with_origin(scope: Scope, origin: str) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"origin"]
    return {**scope, "headers": [*headers, (b"origin", origin.encode("latin-1"))]}


async def _reply(send: Send, status: int, code: str, message: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json"),
                                          (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def guarded(app: Any, token: Token, settings: Settings, max_body_size: int) -> HTTPGuard:
    """The SDK's app behind the gate, configured from settings."""
    return HTTPGuard(app, token.value, allowed_origins(settings.mcp_allowed_origins),
                     settings.mcp_request_timeout_s, max_body_size)
