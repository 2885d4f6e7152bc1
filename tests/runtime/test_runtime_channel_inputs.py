"""What a turn hands its LLM channel (Eq. 2): the query text, the released view texts, and
the prefix of this runtime's earlier answered turns of the same (user, app) scope only,
(query, None, response) each, the latest 16 at most; a channel named by its text
(`openai:URL#MODEL`) decodes with the runtime's seed (0 without one)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.runtime_fixtures import OpenAIEndpoint, copy_example, open_runtime

KEPT = 16  # the transcript prefix a channel sees: the latest 16 turns of the scope


class RecordingChannel:
    """Answers "answer <n>" to its n-th call and records every call as given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[tuple[str, str], ...], tuple[Any, ...]]] = []

    def respond(self, query: str, views: Sequence[tuple[str, str]], prefix: Sequence[Any]) -> str:
        self.calls.append((query, tuple(views), tuple(prefix)))
        return f"answer {len(self.calls)}"


def test_the_channel_sees_the_latest_sixteen_turns_of_the_scope_only(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    channel = RecordingChannel()
    runtime = open_runtime(agent, memory, "memory:", llm=channel)
    answered: dict[str, list[tuple[str, None, str]]] = {"recipes": [], "finance": []}
    for n in range(KEPT + 3):
        query = f"tell me joke number {n}"  # no match: generic views, no charge
        for app in ("recipes", "finance"):  # two applications' scopes: each its own prefix
            turn = runtime.turn("alice", app, "i", query)
            assert channel.calls[-1][2] == tuple(answered[app][-KEPT:])  # before this turn: the latest 16 at most
            answered[app].append((query, None, turn.response))
    runtime.turn("alice", "recipes", "i", "one more joke", respond=False)  # no channel call, nothing kept
    runtime.turn("alice", "recipes", "i", "the last joke")
    assert channel.calls[-1] == ("the last joke", channel.calls[0][1], tuple(answered["recipes"][-KEPT:]))
    assert len(channel.calls) == 2 * (KEPT + 3) + 1
    runtime.close()


@pytest.fixture
def endpoint() -> Iterator[OpenAIEndpoint]:
    """A local endpoint that answers "ok" (a real HTTP server in this process)."""
    pytest.importorskip("httpx")
    with OpenAIEndpoint(lambda body: "ok") as served:
        yield served


@pytest.mark.parametrize(("seed", "sent"), [(7, 7), (0, 0), (None, 0)])
def test_an_endpoint_decodes_with_the_runtimes_seed(
    seed: int | None, sent: int, endpoint: OpenAIEndpoint, tmp_path: Path
) -> None:
    """Every request (the start-up check and each turn) carries the seed `open` was given."""
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", llm=endpoint.llm, seed=seed)
    assert runtime.turn("alice", "recipes", "i", "Budget tips please").response == "ok"
    runtime.close()
    assert [body["seed"] for body in endpoint.bodies] == [sent, sent]  # the start-up check, then the turn
