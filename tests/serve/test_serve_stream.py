"""Streaming a generating channel through the served turn (dpmem_ref.serve.turns with the
SerialChannel of dpmem_ref.serve.server), in process with a stand-in runtime: pieces arrive in
order after the released views, the transcript keeps the whole answer, and a consumer that
leaves mid-answer releases the channel's lock."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

pytest.importorskip("anyio")
pytest.importorskip("uvicorn", reason="extra serve not installed")

from dpmem_ref.serve.server import SerialChannel  # noqa: E402
from dpmem_ref.serve.turns import TurnService  # noqa: E402


class Generating:
    """A channel that generates its answer word by word."""

    def __init__(self) -> None:
        self.prefixes: list[Any] = []

    def respond(self, query: str, views: Any, prefix: Any) -> str:
        return "".join(self.stream(query, views, prefix))

    def stream(self, query: str, views: Any, prefix: Any) -> Any:
        self.prefixes.append(prefix)
        for _, text in views:
            for word in text.split():
                yield word + " "


@attrs.frozen
class Turn:
    query: str
    route: str | None = "r"
    control: Any = None
    remaining: dict[str, str] = attrs.field(factory=dict)
    views: dict[str, str] = attrs.field(factory=lambda: {"food": "v"})


class Runtime:
    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.turn_ids: list[str | None] = []

    def turn(self, user: str, app: str, interaction: str, query: str, respond: bool = True, turn_id: str | None = None) -> Turn:
        assert respond is False  # the service calls the channel itself, after the deadline
        self.turn_ids.append(turn_id)  # the runtime's signature: an idempotency key, or None
        return Turn(query=query)

    def view_texts(self, turn: Turn) -> list[tuple[str, str]]:
        return [("food", "eat more greens today")]


async def collect(service: TurnService, stop_after: int | None = None) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    stream = service.stream("alice", "app", "i", "what to eat")
    async for kind, value in stream:
        events.append((kind, value))
        if stop_after is not None and len(events) == stop_after:
            await stream.aclose()
            break
    return events


def test_a_generating_channel_is_streamed_piece_by_piece_after_the_views() -> None:
    channel = Generating()
    service = TurnService(Runtime(SerialChannel(channel)), deadline_s=0.01)
    events = asyncio.run(collect(service))
    assert events[0][0] == "released"
    assert [value for kind, value in events if kind == "delta"] == ["eat ", "more ", "greens ", "today "]
    assert events[-1] == ("done", "eat more greens today ")
    second = asyncio.run(collect(service))
    assert second[-1][1] == "eat more greens today "
    assert channel.prefixes[1] == (("what to eat", None, "eat more greens today "),)  # the transcript


def test_a_consumer_leaving_mid_answer_releases_the_channel() -> None:
    serial = SerialChannel(Generating())
    service = TurnService(Runtime(serial), deadline_s=0.01)
    events = asyncio.run(collect(service, stop_after=2))
    assert [kind for kind, _ in events] == ["released", "delta"]
    assert not serial._lock.locked()  # another turn may use the channel
    assert asyncio.run(collect(service))[-1][0] == "done"
