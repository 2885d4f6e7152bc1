"""The ASGI gate in front of every route of `dpmem serve` (pure ASGI, no framework import).

In this order, per HTTP request:
1. a body over MAX_BODY_BYTES is refused with 413 before any of it is parsed (the body is
   read, bounded, and replayed to the application);
2. every path under /v1/ needs `Authorization: Bearer <token>` whose SHA-256 matches the keys
   file (constant-time, dpmem_ref.serve.keys): otherwise 401, before the body is looked at.
   The principal is handed to the routes in the ASGI scope; the routes authorise (403);
3. any exception that escapes the application becomes a one-line 500 body and one log line
   with its type and where it was raised, never its message (a message may quote a value)
   and never a traceback;
4. one access-log line per request: method, the route's path template (never the concrete
   path or query string), status and milliseconds. No header, token or body is ever logged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from dpmem_ref.core.errors import error_origin
from dpmem_ref.serve.keys import Keys, Principal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_IN_FLIGHT = 256
"""Requests one process handles at once; the next is answered 503 (bounded work). Stalled
connections are not requests yet (dpmem_ref.serve.limits bounds those)."""
MAX_BODY_BYTES = 65_536
"""A request body past this is refused with 413 before it is parsed."""
PRINCIPAL = "dpmem.principal"
"""The ASGI scope key holding the authenticated Principal of a /v1/ request."""
PROTECTED_PREFIX = "/v1/"
PUBLIC_PATHS = frozenset({"/healthz", "/openapi.json", "/docs"})
log = logging.getLogger("dpmem.serve")


class _BodyTooLarge(Exception):
    pass


def error_body(message: str, field: str | None = None) -> bytes:
    """The one-line JSON error every refusal carries."""
    return json.dumps({"error": message, "field": field}, separators=(",", ":")).encode()


async def _respond(send: Send, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def bearer_token(scope: Scope) -> str | None:
    """The token of an `Authorization: Bearer ...` header, or None."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


async def _read_bounded(receive: Receive) -> tuple[bytes, Message | None]:
    """The whole request body (at most MAX_BODY_BYTES), and a disconnect message if one came."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), message
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class Gate:
    """Wraps the service's ASGI application (see the module docstring)."""

    def __init__(self, app: ASGIApp, keys: Keys, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        self.app = app
        self.keys = keys
        self.max_in_flight = max_in_flight
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 0}

        async def tracked_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await self._handle(scope, receive, tracked_send)
        except Exception as error:  # noqa: BLE001  # never a traceback, never a message
            log.error("internal error %s at %s", type(error).__name__, error_origin(error))
            if status["code"] == 0:
                await _respond(tracked_send, 500, error_body("internal error"))
        finally:
            route = scope.get("route")
            path = str(scope.get("path", ""))
            mounted = str(scope.get("root_path", "")) if getattr(route, "path", None) else ""  # /v1/mcp for the MCP mount
            template = mounted + getattr(route, "path", "") or (
                path if path in PUBLIC_PATHS else "(unauthenticated)" if status["code"] == 401 else "(no route)"
            )
            log.info(
                "%s %s %d %.1fms", scope.get("method", "?"), template, status["code"], (time.perf_counter() - started) * 1e3
            )

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = _declared_length(scope)
        if declared is not None and declared > MAX_BODY_BYTES:
            await _respond(send, 413, error_body(f"request body over {MAX_BODY_BYTES} bytes"))
            return
        if str(scope.get("path", "")).startswith(PROTECTED_PREFIX):
            principal: Principal | None = self.keys.authenticate(bearer_token(scope))
            if principal is None:
                await _respond(
                    send, 401, error_body("missing or unknown bearer token"), ((b"www-authenticate", b"Bearer"),)
                )
                return
            scope[PRINCIPAL] = principal
        try:
            body, disconnect = await _read_bounded(receive)
        except _BodyTooLarge:
            await _respond(send, 413, error_body(f"request body over {MAX_BODY_BYTES} bytes"))
            return
        if disconnect is not None:  # the client left before its body was complete: nothing to serve
            return
        replayed = {"done": False}

        async def replay() -> Message:
            if not replayed["done"]:
                replayed["done"] = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        if self.in_flight >= self.max_in_flight:  # counted once the body is in: a stalled body holds no slot
            await _respond(send, 503, error_body("server busy"), ((b"retry-after", b"1"),))
            return
        self.in_flight += 1  # one event loop: no lock needed
        try:
            await self.app(scope, replay, send)
        finally:
            self.in_flight -= 1
