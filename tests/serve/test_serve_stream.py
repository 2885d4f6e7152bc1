"""Streaming a generating channel through the served turn (dpmem_ref.serve.turns with the
SerialChannel of dpmem_ref.serve.server), in process with a stand-in runtime: pieces arrive in
order after the released views, the transcript keeps the whole answer, and a consumer that
leaves mid-answer releases the channel's lock and closes its pieces. A channel with `respond`
only is one piece: its answer to the query, the view texts and the scope's transcript."""

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

    def turn(
        self, user: str, app: str, interaction: str, query: str, respond: bool = True, turn_id: str | None = None
    ) -> Turn:
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


def test_while_one_scope_is_held_other_users_and_other_applications_stream_to_the_end() -> None:
    """A stream holds its scope's lock, (user, application), until it ends: while alice's stream
    in "app" waits after its views, bob's in "app" and alice's in "other" run to the end, and
    alice's then ends as usual."""

    async def to_the_end(stream: Any) -> list[tuple[str, Any]]:
        return [event async for event in stream]

    async def scenario() -> tuple[list[Any], Any]:
        service = TurnService(Runtime(Generating()), deadline_s=0.01)
        held = service.stream("alice", "app", "i", "what to eat")
        assert (await anext(held))[0] == "released"
        others = []
        for user, app in (("bob", "app"), ("alice", "other")):
            events = await asyncio.wait_for(to_the_end(service.stream(user, app, "i", "what to eat")), timeout=5)
            others.append(events[-1])
        return others, (await to_the_end(held))[-1]

    done = ("done", "eat more greens today ")
    assert asyncio.run(scenario()) == ([done, done], done)


class Answering:
    """A channel with `respond` only: its answer names exactly what it was given."""

    def respond(self, query: str, views: Any, prefix: Any) -> str:
        return f"{query} | {views!r} | {prefix!r}"


class Pieces:
    """A channel's piece iterator that is not a generator: only an explicit close ends it."""

    def __init__(self, pieces: list[Any]) -> None:
        self.left = list(pieces)
        self.closed = False

    def __iter__(self) -> Pieces:
        return self

    def __next__(self) -> Any:
        if not self.left:
            raise StopIteration
        return self.left.pop(0)

    def close(self) -> None:
        self.closed = True


class Streaming:
    """A channel whose `stream` hands out the given pieces, after the query it was asked."""

    def __init__(self, *pieces: Any) -> None:
        self.pieces = pieces
        self.handed: list[Pieces] = []

    def respond(self, query: str, views: Any, prefix: Any) -> str:
        raise AssertionError("a channel with stream is streamed, never asked to respond")

    def stream(self, query: str, views: Any, prefix: Any) -> Pieces:
        self.handed.append(Pieces([query, *self.pieces]))
        return self.handed[-1]


VIEWS = (("food", "eat more greens today"),)


def test_the_serial_channel_hands_respond_the_query_views_and_transcript_and_returns_text() -> None:
    transcript = (("q", None, "a"),)
    answer = "what to eat | (('food', 'eat more greens today'),) | (('q', None, 'a'),)"
    assert SerialChannel(Answering()).respond("what to eat", VIEWS, transcript) == answer


def test_closing_the_serial_channel_closes_its_channel_once_and_needs_no_close() -> None:
    """The runtime closes its channel when the server stops: SerialChannel passes that on to a
    channel with `close` (an HTTP client, a model), and one without `close` is left as it is."""

    class Closing(Answering):
        closed = 0

        def close(self) -> None:
            self.closed += 1

    channel = Closing()
    SerialChannel(channel).close()
    assert channel.closed == 1
    SerialChannel(Answering()).close()  # nothing to close, no error


def test_the_serial_channel_streams_a_respond_only_channel_as_its_one_answer() -> None:
    answer = "what to eat | (('food', 'eat more greens today'),) | (('q', None, 'a'),)"
    assert list(SerialChannel(Answering()).stream("what to eat", VIEWS, (("q", None, "a"),))) == [answer]


def test_the_serial_channel_passes_the_query_to_a_streaming_channel_and_sends_text() -> None:
    channel = Streaming(1, None)
    assert list(SerialChannel(channel).stream("what to eat", VIEWS, ())) == ["what to eat", "1"]
    assert channel.handed[0].closed is False  # read to its end: nothing to close


def test_a_respond_only_channel_is_one_piece_given_the_query_views_and_transcript() -> None:
    service = TurnService(Runtime(Answering()), deadline_s=0.01)
    first = asyncio.run(collect(service))
    answer = "what to eat | (('food', 'eat more greens today'),) | ()"
    assert first == [("released", (Turn(query="what to eat"), list(VIEWS))), ("delta", answer), ("done", answer)]
    second = asyncio.run(collect(service))
    again = f"what to eat | (('food', 'eat more greens today'),) | (('what to eat', None, {answer!r}),)"
    assert second[1:] == [("delta", again), ("done", again)]


def test_every_piece_is_sent_as_its_text_until_the_channel_ends_wrapped_or_not() -> None:
    """The answer ends when the channel's iterator does, not at a piece that happens to be None
    (a piece without text, as an OpenAI-style chunk with no content: nothing is sent for it, never
    the word "None"): the raw channel and the same channel behind SerialChannel send the same text."""
    expected = [
        ("delta", "what to eat"),
        ("delta", "greens"),
        ("delta", "3"),
        ("done", "what to eatgreens3"),
    ]
    for channel in (Streaming("greens", None, 3), SerialChannel(Streaming("greens", None, 3))):
        events = asyncio.run(collect(TurnService(Runtime(channel), deadline_s=0.01)))
        assert events[1:] == expected


def test_a_consumer_leaving_mid_answer_closes_the_channels_pieces() -> None:
    channel = Streaming("greens", "today")
    service = TurnService(Runtime(channel), deadline_s=0.01)
    events = asyncio.run(collect(service, stop_after=2))
    assert events[1:] == [("delta", "what to eat")]
    (pieces,) = channel.handed
    assert pieces.closed is True and pieces.left == ["greens", "today"]
