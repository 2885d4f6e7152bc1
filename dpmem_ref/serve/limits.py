"""Bounded connections for `dpmem serve`: header, body and idle timeouts, a per-client and a
global connection limit (threat model and proxy set-up: docs/serve.md, "Bounded connections").

A small layer over uvicorn's h11 protocol (imported only when serving). Per connection:
- **header timeout**: a request's head (request line and headers) must be complete within
  `header_s` of the connection opening, or of the previous response on a kept-alive connection;
- **body timeout**: once the head is in, the body must be complete within `body_s`;
- **idle timeout**: a kept-alive connection with no request in progress closes after `idle_s`
  (uvicorn's keep-alive timeout);
- **per-client limit**: at most `per_client` open connections from one peer address; the next is
  closed at once (behind a reverse proxy every peer is the proxy: see docs/serve.md);
- **global limit**: at most `total` open connections per process; the next is closed at once.

A connection that misses a deadline is closed (the client sees the connection end); no request
of it reaches the application. Stalled connections hold no worker thread and no slot of the
application's concurrency: a well-behaved client keeps being served while they wait out
their deadlines.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import attrs
import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def _positive(_: Any, attribute: Any, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name}: expected a positive number, found {value!r}")


@attrs.frozen
class Limits:
    """The connection bounds of one server process (defaults: docs/serve.md)."""

    header_s: float = attrs.field(default=10.0, validator=_positive)
    body_s: float = attrs.field(default=30.0, validator=_positive)
    idle_s: float = attrs.field(default=5.0, validator=_positive)
    per_client: int = attrs.field(default=64, validator=_positive)
    total: int = attrs.field(default=4096, validator=_positive)


def bounded_protocol(limits: Limits) -> type[asyncio.Protocol]:
    """An H11Protocol class enforcing `limits` (one per server: it owns the per-client counts)."""
    open_by_peer: Counter[str] = Counter()
    open_total = [0]

    class BoundedH11Protocol(H11Protocol):
        _counted: str | None = None
        _deadline: asyncio.TimerHandle | None = None
        _phase = ""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            peer = self.client[0] if self.client else "?"
            if open_total[0] >= limits.total or open_by_peer[peer] >= limits.per_client:
                transport.abort()  # refused before a byte is read; connection_lost follows
                return
            open_by_peer[peer] += 1
            open_total[0] += 1
            self._counted = peer
            self._arm("head", limits.header_s)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._counted is not None:
                open_by_peer[self._counted] -= 1
                if open_by_peer[self._counted] <= 0:
                    del open_by_peer[self._counted]
                open_total[0] -= 1
                self._counted = None
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow()

        # -- the read deadline follows the request's state
        def _follow(self) -> None:
            if self._counted is None or self.transport.is_closing():
                return
            state = self.conn.their_state
            if state is h11.SEND_BODY:
                if self._phase != "body":
                    self._arm("body", limits.body_s)
            elif state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
                if self._phase != "head":
                    self._arm("head", limits.header_s)
            else:  # the request is read (the application has it) or the connection is ending
                self._disarm()

        def _arm(self, phase: str, seconds: float) -> None:
            self._disarm()
            self._phase = phase
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline, self._phase = None, ""

        def _expired(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

    BoundedH11Protocol.__qualname__ = BoundedH11Protocol.__name__ = "BoundedH11Protocol"
    return BoundedH11Protocol
