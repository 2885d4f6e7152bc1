"""Served turns: the runtime's views-only turn, the release deadline as a non-blocking wait, then
the LLM channel (imported only when serving).

Per turn, under the scope's lock (one (user, application) scope's turns run in one order):
1. `AgentRuntime.turn(..., respond=False)` in a worker thread: one load of the scope, route,
   Algorithm 1, the charge committed to the durable ledger (C5 checked on the committed
   ledgers) before it returns;
2. an `asyncio` wait until start + the release deadline: nothing of the turn is observable
   before it (no thread is held while waiting, so the deadline caps one scope, not the server);
3. if the caller wants an answer, the channel `respond(query, view texts, prefix)` (Eq. 2: the
   query, the released view texts and this scope's earlier turns only), in a worker thread.
   A channel with a `stream(query, views, prefix)` method (an iterator of text pieces) is
   streamed piece by piece (server-sent events); any other channel is one piece.

The runtime must be opened with `turn_deadline_s=None` (dpmem_ref.serve.server does; `TurnService`
refuses any other runtime, whose own deadline would hold a worker thread per turn), so this is the
only deadline; turns of different scopes run in parallel (worker threads; the ledger store's
own transactions keep them apart, as between replicas).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio.to_thread

from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.timing import DEFAULT_DURABLE_TURN_DEADLINE_S
from dpmem_ref.serve.models import ReleasedView, TurnResponse

log = logging.getLogger("dpmem.serve")
TRANSCRIPT_TURNS = 16
"""Earlier turns of a scope kept as the channel's prefix (as the runtime keeps)."""


class TurnService:
    """The runtime's turns served with an asynchronous release deadline (see the module docstring)."""

    def __init__(self, runtime: Any, deadline_s: float | None = DEFAULT_DURABLE_TURN_DEADLINE_S, workers: int | None = None) -> None:
        held = getattr(runtime, "turn_deadline_s", None)
        if held is not None:
            # A runtime that waits its own release deadline holds a worker thread for it on every
            # turn: N workers would then cap the whole server at N turns per deadline.
            raise InputError("turn_deadline_s", "None (the served turn waits its deadline without a thread)", held)
        self.runtime = runtime
        self.deadline_s = deadline_s
        self.overruns = 0
        # Kernel turns run on a pool sized to the host: more threads than cores only contend for
        # the GIL and the store's lock (a queued turn holds no thread while it waits).
        self.workers = workers or max(2, 2 * (os.cpu_count() or 1))
        self._pool = anyio.CapacityLimiter(self.workers)
        log.info("kernel turns on %d worker threads", self.workers)
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._transcripts: dict[tuple[str, str], list[tuple[str, Any, str]]] = {}

    def _lock(self, user: str, app: str) -> asyncio.Lock:
        return self._locks.setdefault((user, app), asyncio.Lock())  # one event loop: no race

    async def _released(
        self, user: str, app: str, interaction: str, query: str, turn_id: str | None = None
    ) -> tuple[Any, list[tuple[str, str]]]:
        def work() -> tuple[float, Any]:  # the clock starts when the kernel does (not in the queue)
            return time.monotonic(), self.runtime.turn(user, app, interaction, query, respond=False, turn_id=turn_id)

        started, done = await anyio.to_thread.run_sync(work, limiter=self._pool)
        if self.deadline_s is not None:
            left = started + self.deadline_s - time.monotonic()
            if left > 0:
                await asyncio.sleep(left)
            else:
                self.overruns += 1
                log.warning("a turn overran its release deadline of %.3f s", self.deadline_s)
        return done, list(self.runtime.view_texts(done))

    async def turn(
        self, user: str, app: str, interaction: str, query: str, respond: bool, turn_id: str | None = None
    ) -> tuple[Any, list[tuple[str, str]], str]:
        """(the AgentTurn, its released (slot, view text) pairs, the answer or ""). With a `turn_id`
        (the client's Idempotency-Key) the runtime records the released views with the charge, and a
        retry after a channel failure is served from them at no new charge."""
        async with self._lock(user, app):
            done, texts = await self._released(user, app, interaction, query, turn_id)
            answer = ""
            if respond:
                prefix = tuple(self._transcripts.get((user, app), ()))
                answer = await anyio.to_thread.run_sync(lambda: self._respond(done.query, tuple(texts), prefix, turn_id))
                self._remember(user, app, done.query, answer)
            return done, texts, answer

    def _respond(self, query: str, texts: tuple[tuple[str, str], ...], prefix: Any, turn_id: str | None) -> str:
        """The channel's answer; a failure after the charge is the channel's (`ChannelUnavailable`: 503
        naming the channel), never the application's input."""
        from dpmem_ref.runtime.turns import ChannelUnavailable

        try:
            return str(self.runtime.channel.respond(query, texts, prefix))
        except Exception as error:
            retry = "retry with the same turn_id: no new charge" if turn_id else "send a turn_id to retry at no new charge"
            name = getattr(self.runtime, "channel_name", type(self.runtime.channel).__name__)
            raise ChannelUnavailable(f"llm channel {name}", f"a channel that answers ({retry})", type(error).__name__) from None

    async def stream(self, user: str, app: str, interaction: str, query: str) -> AsyncIterator[tuple[str, Any]]:
        """("released", (AgentTurn, view texts)) at the deadline, then ("delta", text piece)..., ("done", answer)."""
        async with self._lock(user, app):
            done, texts = await self._released(user, app, interaction, query)
            yield "released", (done, texts)
            prefix = tuple(self._transcripts.get((user, app), ()))
            channel = self.runtime.channel
            pieces: Iterator[str]
            if callable(getattr(channel, "stream", None)):
                pieces = iter(channel.stream(done.query, tuple(texts), prefix))  # a generator: nothing runs yet
            else:
                pieces = iter([await anyio.to_thread.run_sync(lambda: str(channel.respond(done.query, tuple(texts), prefix)))])
            answer: list[str] = []
            sentinel = object()
            try:
                while True:
                    piece = await anyio.to_thread.run_sync(lambda: next(pieces, sentinel))
                    if piece is sentinel:
                        break
                    if piece is None:  # a piece without text (an OpenAI-style chunk with no content)
                        continue
                    answer.append(str(piece))
                    yield "delta", str(piece)
            finally:  # a client that leaves mid-answer: the channel's generator (and its lock) is closed
                close = getattr(pieces, "close", None)
                if callable(close):
                    await anyio.to_thread.run_sync(close)
            self._remember(user, app, done.query, "".join(answer))
            yield "done", "".join(answer)

    def _remember(self, user: str, app: str, query: str, answer: str) -> None:
        transcript = self._transcripts.setdefault((user, app), [])
        transcript.append((query, None, answer))
        del transcript[:-TRANSCRIPT_TURNS]


def turn_response(result: Any, texts: list[tuple[str, str]], answer: str) -> TurnResponse:
    """The JSON answer of one served turn: response, control, remaining, route and the released views."""
    names = dict(result.views)
    views = [ReleasedView(slot=slot, view=str(names.get(slot, "")), text=text) for slot, text in texts]
    return TurnResponse(response=answer, control=result.control, remaining=dict(result.remaining), route=result.route, views=views)
