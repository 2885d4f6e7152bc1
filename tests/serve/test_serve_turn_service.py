"""The served turn's own rules (dpmem_ref.serve.turns.TurnService and turn_response), in process
with a stand-in runtime whose turn returns at once (tests/serve/test_serve_stream.py streams
through the same service; the live-server suites run it behind HTTP):

- a runtime that waits its own release deadline is refused in one line; the kernel turns run on
  max(2, 2 x cores) worker threads unless told, and the count is logged;
- nothing of a turn returns before start + the release deadline; a turn that overruns it is
  counted and logged with the deadline, and waits no further;
- the channel answers the released query, the view texts and the scope's transcript (its last
  TRANSCRIPT_TURNS turns, per (user, application)); a channel that fails is a
  ChannelUnavailable naming the channel and how to retry at no new charge;
- one scope's turns run one at a time, other scopes' in parallel;
- the JSON answer names each released slot's view (or "" for a slot without one).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

pytest.importorskip("anyio")
pytest.importorskip("uvicorn", reason="extra serve not installed")

from dpmem_ref.core.errors import InputError  # noqa: E402
from dpmem_ref.runtime.turns import ChannelUnavailable  # noqa: E402
from dpmem_ref.serve import turns as served_turns  # noqa: E402
from dpmem_ref.serve.turns import TRANSCRIPT_TURNS, TurnService, turn_response  # noqa: E402
from tests.serve.test_serve_stream import Turn  # noqa: E402  (the runtime's AgentTurn surface)


class Recording:
    """A channel that answers with a numbered reply and records what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    def respond(self, query: str, views: Any, prefix: Any) -> str:
        self.calls.append((query, views, prefix))
        return f"answer {len(self.calls)}"


class Failing:
    def respond(self, query: str, views: Any, prefix: Any) -> str:
        raise ConnectionResetError("the model server went away")


class Runtime:
    """The runtime's turn surface: `turn(..., respond=False)` after `work_s` seconds of work."""

    turn_deadline_s = None

    def __init__(self, channel: Any, work_s: float = 0.0) -> None:
        self.channel = channel
        self.work_s = work_s
        self.spans: list[tuple[str, float, float]] = []  # (user, started, ended) of each kernel turn

    def turn(self, user: str, app: str, interaction: str, query: str, respond: bool, turn_id: str | None) -> Turn:
        assert respond is False
        started = time.monotonic()
        time.sleep(self.work_s)
        self.spans.append((user, started, time.monotonic()))
        return Turn(query=f"released {query}")

    def view_texts(self, turn: Turn) -> list[tuple[str, str]]:
        return [("food", "eat more greens")]


def test_a_runtime_that_waits_its_own_deadline_is_refused() -> None:
    """The served turn waits the deadline without a thread: a runtime opened with its own
    `turn_deadline_s` would hold a worker thread per turn, and is refused naming it."""
    runtime = Runtime(Recording())
    runtime.turn_deadline_s = 2.0  # type: ignore[assignment]
    with pytest.raises(InputError) as refused:
        TurnService(runtime)
    assert str(refused.value) == (
        "turn_deadline_s: expected None (the served turn waits its deadline without a thread), found 2.0"
    )


@pytest.mark.parametrize(("cores", "workers"), [(None, 2), (1, 2), (3, 6), (8, 16)])
def test_kernel_turns_run_on_twice_the_cores_and_at_least_two_threads(
    cores: int | None, workers: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Unless told, max(2, 2 x os.cpu_count()) worker threads (2 where the count is unknown),
    logged once by `dpmem.serve`; an explicit count is kept."""
    monkeypatch.setattr(served_turns.os, "cpu_count", lambda: cores)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dpmem.serve"):
        service = TurnService(Runtime(Recording()))
    assert service.workers == workers
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("dpmem.serve", logging.INFO, f"kernel turns on {workers} worker threads")
    ]
    assert TurnService(Runtime(Recording()), workers=3).workers == 3
    assert (service.deadline_s, service.overruns) == (served_turns.DEFAULT_DURABLE_TURN_DEADLINE_S, 0)


def test_nothing_returns_before_the_release_deadline() -> None:
    """The turn returns no earlier than start + deadline_s (the released views and the answer
    together), and within a short while after it; without a deadline it returns at once."""
    channel = Recording()
    service = TurnService(Runtime(channel), deadline_s=0.3)
    started = time.monotonic()
    done, texts, answer = asyncio.run(service.turn("alice", "app", "i", "what to eat", respond=True))
    took = time.monotonic() - started
    assert 0.3 <= took < 2.0
    assert (done.query, texts, answer, service.overruns) == (
        "released what to eat",
        [("food", "eat more greens")],
        "answer 1",
        0,
    )
    started = time.monotonic()
    asyncio.run(TurnService(Runtime(channel), deadline_s=None).turn("alice", "app", "i", "q", respond=False))
    assert time.monotonic() - started < 0.25


def test_a_turn_past_its_deadline_is_counted_and_logged_and_not_held(caplog: pytest.LogCaptureFixture) -> None:
    """A kernel turn that takes longer than the deadline is released at once after it, counted
    in `overruns` and logged as a warning naming the deadline."""
    service = TurnService(Runtime(Recording(), work_s=0.2), deadline_s=0.05)
    with caplog.at_level(logging.WARNING, logger="dpmem.serve"):
        started = time.monotonic()
        asyncio.run(service.turn("alice", "app", "i", "q", respond=False))
        took = time.monotonic() - started
        asyncio.run(service.turn("alice", "app", "i", "q", respond=False))
    assert took < 1.0
    assert service.overruns == 2
    warned = [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [("dpmem.serve", logging.WARNING, "a turn overran its release deadline of 0.050 s")] * 2


def test_the_channel_answers_the_released_query_views_and_the_scopes_last_turns() -> None:
    """The channel gets the released query, the view texts and this (user, application)'s
    earlier (query, None, answer) turns, at most TRANSCRIPT_TURNS of them, oldest first; another
    scope's transcript starts empty; a turn without an answer adds nothing to it."""
    channel = Recording()
    service = TurnService(Runtime(channel), deadline_s=None)

    async def turns() -> None:
        for n in range(TRANSCRIPT_TURNS + 2):
            await service.turn("alice", "app", "i", f"q{n}", respond=True)
        await service.turn("alice", "app", "i", "not answered", respond=False)
        await service.turn("alice", "other app", "i", "elsewhere", respond=True)
        await service.turn("bob", "app", "i", "bob's", respond=True)
        await service.turn("alice", "app", "i", "last", respond=True)

    asyncio.run(turns())
    query, views, prefix = channel.calls[0]
    assert (query, views, prefix) == ("released q0", (("food", "eat more greens"),), ())
    assert channel.calls[1][2] == (("released q0", None, "answer 1"),)
    kept = channel.calls[TRANSCRIPT_TURNS + 1][2]
    assert kept == tuple((f"released q{n}", None, f"answer {n + 1}") for n in range(1, TRANSCRIPT_TURNS + 1))
    assert channel.calls[TRANSCRIPT_TURNS + 2][2] == ()  # another application: its own transcript
    assert channel.calls[TRANSCRIPT_TURNS + 3][2] == ()  # another user
    last = channel.calls[-1][2]
    assert len(last) == TRANSCRIPT_TURNS and last[-1] == (f"released q{TRANSCRIPT_TURNS + 1}", None, "answer 18")


@pytest.mark.parametrize(
    ("turn_id", "named", "line"),
    [
        (
            "turn-7",
            True,
            "llm channel ollama: expected a channel that answers (retry with the same turn_id: no new charge), "
            "found 'ConnectionResetError'",
        ),
        (
            None,
            False,
            "llm channel Failing: expected a channel that answers (send a turn_id to retry at no new charge), "
            "found 'ConnectionResetError'",
        ),
    ],
    ids=["with a turn id, a named channel", "without, the channel's type"],
)
def test_a_failing_channel_is_unavailable_naming_it_and_how_to_retry(
    turn_id: str | None, named: bool, line: str
) -> None:
    """After the charge, the channel's failure is a ChannelUnavailable (503), naming the
    runtime's channel name (else the channel's type), how to retry at no new charge, and only
    the type of the error (its text may hold a URL)."""
    runtime = Runtime(Failing())
    if named:
        runtime.channel_name = "ollama"  # type: ignore[attr-defined]
    service = TurnService(runtime, deadline_s=None)
    with pytest.raises(ChannelUnavailable) as failed:
        asyncio.run(service.turn("alice", "app", "i", "q", respond=True, turn_id=turn_id))
    assert str(failed.value) == line
    assert "went away" not in str(failed.value)


def test_one_scopes_turns_run_one_at_a_time_and_other_scopes_in_parallel() -> None:
    """Two turns of one (user, application) never overlap, kernel turn and deadline included;
    turns of two users overlap."""
    runtime = Runtime(Recording(), work_s=0.15)
    service = TurnService(runtime, deadline_s=0.2, workers=4)

    async def together(first: str, second: str) -> list[float]:
        ends: list[float] = []

        async def one(user: str) -> None:
            await service.turn(user, "app", "i", "q", respond=False)
            ends.append(time.monotonic())

        await asyncio.gather(one(first), one(second))
        return ends

    started = time.monotonic()
    asyncio.run(together("alice", "alice"))
    (_, first_start, _), (_, second_start, _) = runtime.spans
    assert second_start - first_start >= 0.2  # the second started after the first's deadline
    assert time.monotonic() - started >= 0.4
    runtime.spans.clear()
    asyncio.run(together("alice", "bob"))
    (_, a_start, a_end), (_, b_start, b_end) = runtime.spans
    assert max(a_start, b_start) < min(a_end, b_end)  # the kernel turns overlapped


def test_kernel_turns_share_the_services_worker_threads() -> None:
    """The kernel turns of every scope run on the service's own `workers` threads: with one,
    two users' kernel turns run one after the other (their deadlines still overlap)."""
    runtime = Runtime(Recording(), work_s=0.15)
    service = TurnService(runtime, deadline_s=None, workers=1)

    async def both() -> None:
        await asyncio.gather(*(service.turn(user, "app", "i", "q", respond=False) for user in ("alice", "bob")))

    asyncio.run(both())
    (_, a_start, a_end), (_, b_start, b_end) = sorted(runtime.spans, key=lambda span: span[1])
    assert b_start >= a_end  # one thread: the second kernel turn waited for the first


def test_without_respond_the_answer_is_empty_and_the_channel_is_not_asked() -> None:
    channel = Recording()
    service = TurnService(Runtime(channel), deadline_s=None)
    done, texts, answer = asyncio.run(service.turn("alice", "app", "i", "q", respond=False))
    assert (done.query, texts, answer, channel.calls) == ("released q", [("food", "eat more greens")], "", [])


def test_the_json_answer_names_each_released_slots_view() -> None:
    """turn_response: the answer, control, remaining and route of the turn, and per released
    (slot, text) the view the turn released for that slot ("" for a slot it names no view for)."""
    turn = Turn(query="q", control="c", remaining={"food": "1/2"}, views={"food": "v-food", "sleep": "v-sleep"})
    response = turn_response(turn, [("food", "eat"), ("mood", "calm")], "the answer")
    assert response.model_dump() == {
        "response": "the answer",
        "control": "c",
        "remaining": {"food": "1/2"},
        "route": "r",
        "views": [{"slot": "food", "view": "v-food", "text": "eat"}, {"slot": "mood", "view": "", "text": "calm"}],
    }
