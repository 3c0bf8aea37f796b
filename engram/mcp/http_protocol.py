"""uvicorn's h11 protocol with a deadline on the request headers (uvicorn has none: a client that
connects and sends a header line a minute keeps its connection forever).

The clock starts when the connection opens, or when the first bytes of a next request arrive on a
kept-alive one; the connection is closed when the headers are not complete by then. The body has its
own deadline in engram.mcp.http_guard, the idle time between requests is uvicorn's timeout_keep_alive.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("engram.mcp")


class HeaderDeadlineProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request headers take longer than `headers_timeout_s`."""

    headers_timeout_s: float = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._headers_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_request():
            self._disarm()
        elif self._headers_deadline is None:
            self._arm()

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._headers_deadline = self.loop.call_later(self.headers_timeout_s, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._headers_deadline is not None:
            self._headers_deadline.cancel()
            self._headers_deadline = None

    def _headers_too_slow(self) -> None:
        self._headers_deadline = None
        if self._in_request() or self.transport.is_closing():
            return
        log.info("mcp http: request headers not received within %.1f s; connection closed", self.headers_timeout_s)
        self.transport.close()


def with_headers_timeout(timeout_s: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class uvicorn is given (its Config takes a class, not an instance)."""
    return type("EngramHTTPProtocol", (HeaderDeadlineProtocol,), {"headers_timeout_s": timeout_s})
