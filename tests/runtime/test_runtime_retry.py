"""Charge once, answer or retry: when the LLM channel fails after a turn was charged, the
application gets an error naming the channel (HTTP 503, not 422 blaming its input), and a
retry with the same turn id regenerates from the recorded views at no new charge."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpmem_ref.runtime.agent as agent_module
from dpmem_ref.core.errors import InputError
from dpmem_ref.runtime.agent import AgentRuntime, ChannelUnavailable
from dpmem_ref.runtime.turns import channel_name, check_channel_answers
from tests.runtime_fixtures import copy_example, ledger_table, open_runtime

QUERIES = [
    "What should I cook for dinner tonight?",
    "Budget tips please",
    "Plan my weeknight evenings",
    "tell me a joke",
]


class FlakyChannel:
    """Fails its first `failures` calls (like an unreachable endpoint), then echoes the views."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def respond(self, query: str, views: Sequence[tuple[str, str]], prefix: Sequence[Any]) -> str:
        self.calls.append((query, tuple(text for _, text in views)))
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("endpoint down")
        return " | ".join(text for _, text in views)


def _spent(runtime: AgentRuntime) -> dict[str, Fraction]:
    return ledger_table(runtime, "alice").get((0, "finance"), {"diabetes": Fraction(0), "debt": Fraction(0)})


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("failures", [1, 3])
def test_a_failed_channel_is_retried_from_the_recorded_views_at_no_new_charge(
    query: str, failures: int, tmp_path: Path
) -> None:
    agent, memory = copy_example(tmp_path)
    channel = FlakyChannel(failures)
    runtime = open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}", llm=channel)
    charged: dict[str, Fraction] | None = None
    for _ in range(failures):
        with pytest.raises(ChannelUnavailable) as caught:
            runtime.turn("alice", "finance", "i", query, turn_id="t-1")
        message = str(caught.value)
        assert "\n" not in message and message.startswith("llm channel FlakyChannel") and "same turn_id" in message
        assert charged is None or _spent(runtime) == charged  # a retry charges nothing
        charged = _spent(runtime)
    turn = runtime.turn("alice", "finance", "i", query, turn_id="t-1")
    assert turn.retried and turn.response and _spent(runtime) == charged
    assert len({views for _, views in channel.calls}) == 1  # every attempt saw the same released views
    again = runtime.turn("alice", "finance", "i", query, turn_id="t-1")  # a duplicate after success: no charge either
    assert again.views == turn.views and _spent(runtime) == charged
    with pytest.raises(InputError, match="turn_id") as other:
        runtime.turn("alice", "finance", "i", "something else entirely", turn_id="t-1")
    assert "\n" not in str(other.value)
    runtime.close()


def test_without_a_turn_id_the_error_says_how_to_retry(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", llm=FlakyChannel(1))
    with pytest.raises(ChannelUnavailable, match="send a turn_id"):
        runtime.turn("alice", "recipes", "i", QUERIES[0])
    runtime.close()


UNAVAILABLE = "llm channel {name}: expected a channel that answers ({retry}), found '{error}'"
WITH_ID = "retry with the same turn_id: no new charge"
WITHOUT_ID = "send a turn_id to retry at no new charge"


@pytest.mark.parametrize(("turn_id", "retry"), [(None, WITHOUT_ID), ("t-7", WITH_ID)])
@pytest.mark.parametrize("opened", [True, False], ids=["opened", "constructed"])
def test_a_channel_failure_is_one_exact_line_naming_the_channel_kind(
    turn_id: str | None, retry: str, opened: bool, tmp_path: Path
) -> None:
    """`open` names the channel by its kind; a runtime built by its constructor names it by
    the channel object's type. Never the channel's own message."""
    agent, memory = copy_example(tmp_path)
    channel = BrokenChannel(ConnectionError("endpoint down at 10.0.0.7"))
    base = open_runtime(agent, memory, "memory:", llm=channel)
    parts = (base.agent, base.memory, base.ledger_store, channel, base.source, base.router, base.user_caps, base.epoch)
    runtime = base if opened else AgentRuntime(*parts, None, base.shares)
    with pytest.raises(ChannelUnavailable) as caught:
        runtime.turn("alice", "finance", "i", QUERIES[1], turn_id=turn_id)
    assert str(caught.value) == UNAVAILABLE.format(name="BrokenChannel", retry=retry, error="ConnectionError")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    base.close()


def _closed_port() -> int:
    """A local port nothing listens on: a connection to it is refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# An address with a user, a password and a port: none of it may appear in a message.
OPENAI_WITH_SECRETS = "openai:http://user:secret@127.0.0.1:{port}/v1#tiny-model"


@pytest.mark.parametrize(
    ("llm", "name"),
    [
        ("echo", "echo"),
        ("smollm2", "smollm2"),
        ("hf:HuggingFaceTB/SmolLM2-135M-Instruct", "hf"),
        ("hf:C:/models/local", "hf"),
        ("openai:http://127.0.0.1:8000/v1#m", "openai"),
        (OPENAI_WITH_SECRETS.format(port=8000), "openai"),
        ("openai:https://host name:1/v1#m", "openai"),
        (FlakyChannel(0), "FlakyChannel"),
        (object(), "object"),
    ],
)
def test_a_channel_is_named_by_its_kind_never_by_its_address(llm: object, name: str) -> None:
    """A channel given as text is named by the part before its first colon (the whole text
    when it has none); a channel object by its type."""
    assert channel_name(llm) == name


def test_an_unreachable_endpoint_is_named_openai_at_start_up_and_at_a_turn(tmp_path: Path) -> None:
    """The channel's name in `open`'s start-up refusal and in a turn's failure is its kind
    alone: never the URL with its user, password, host or port."""
    agent, memory = copy_example(tmp_path)
    llm = OPENAI_WITH_SECRETS.format(port=_closed_port())
    with pytest.raises(ChannelUnavailable) as caught:
        open_runtime(agent, memory, "memory:", llm=llm)
    assert str(caught.value) == START_UP_REFUSAL.format(name="openai", error="InputError")
    runtime = open_runtime(agent, memory, "memory:", llm=llm, check_channel=False)
    assert runtime.channel_name == "openai"
    with pytest.raises(ChannelUnavailable) as failed:
        runtime.turn("alice", "finance", "i", QUERIES[1], turn_id="t-1")
    assert str(failed.value) == UNAVAILABLE.format(name="openai", retry=WITH_ID, error="InputError")
    runtime.close()
    assert open_runtime(agent, memory, "memory:", llm="echo").channel_name == "echo"


TURN_ID_REUSED = "turn_id: expected the query of the turn it names (an idempotency key), found 'another query'"


def test_a_turn_id_reused_for_another_query_is_refused_in_one_exact_line(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    for query in (QUERIES[1], QUERIES[3]):  # a charged turn and a no-match turn
        runtime.turn("alice", "finance", "i", query, turn_id=f"t-{len(query)}")
        with pytest.raises(InputError) as caught:
            runtime.turn("alice", "finance", "i", "something else entirely", turn_id=f"t-{len(query)}")
        assert str(caught.value) == TURN_ID_REUSED
    runtime.close()


def test_the_process_keeps_the_latest_recorded_turns_up_to_its_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No-match turns are recorded in this process only (no ledger rows): past the limit the
    oldest is dropped, and a retry of it is served as a new turn, never as a retry."""
    monkeypatch.setattr(agent_module, "MAX_RECORDED_TURNS", 2)
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    for turn_id in ("a", "b", "c"):
        assert not runtime.turn("alice", "recipes", "i", QUERIES[3], turn_id=turn_id).retried
    assert runtime.turn("alice", "recipes", "i", QUERIES[3], turn_id="b").retried  # kept: b and c
    assert runtime.turn("alice", "recipes", "i", QUERIES[3], turn_id="c").retried
    assert not runtime.turn("alice", "recipes", "i", QUERIES[3], turn_id="a").retried  # dropped; now kept again
    assert runtime.turn("alice", "recipes", "i", QUERIES[3], turn_id="a").retried
    runtime.close()


def test_turn_ids_are_per_scope(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    first = runtime.turn("alice", "recipes", "i", QUERIES[1], turn_id="same")
    other = runtime.turn("alice", "finance", "i", QUERIES[1], turn_id="same")  # another scope: its own turn
    assert not first.retried and not other.retried
    assert runtime.turn("alice", "recipes", "i", QUERIES[1], turn_id="same").retried
    with pytest.raises(InputError, match="turn_id"):
        runtime.turn("alice", "recipes", "i", QUERIES[1], turn_id="bad id")
    runtime.close()


START_UP_REFUSAL = "llm channel {name}: expected a channel that answers at start-up, found '{error}'"
START_UP_PROBE = ("start-up check", (), ())  # a fixed text, no views, no transcript: nothing of any user


class ProbedChannel:
    """Records every call as given; fails with `error` (when set); counts its closes."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.calls: list[tuple[Any, ...]] = []
        self.closes = 0

    def respond(self, query: str, views: Sequence[tuple[str, str]], prefix: Sequence[Any]) -> str:
        self.calls.append((query, views, prefix))
        if self.error is not None:
            raise self.error
        return "ready"

    def close(self) -> None:
        self.closes += 1


class UnclosableChannel:
    """A failing channel whose `close` is data, not a method: the check must not call it."""

    close = "not a method"

    def respond(self, query: str, views: Sequence[tuple[str, str]], prefix: Sequence[Any]) -> str:
        raise TimeoutError("slow")


def test_a_channel_that_cannot_answer_is_refused_at_start_up(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    with pytest.raises(ChannelUnavailable) as caught:
        open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}", llm=FlakyChannel(1), check_channel=True)
    assert str(caught.value) == START_UP_REFUSAL.format(name="FlakyChannel", error="ConnectionError")
    assert not (tmp_path / "l.db").exists()  # refused before the ledger database was touched


def test_the_start_up_check_closes_a_channel_that_fails_and_names_its_error() -> None:
    channel = ProbedChannel(ConnectionError("endpoint down at 10.0.0.7"))
    with pytest.raises(ChannelUnavailable) as caught:
        check_channel_answers(channel, "openai")
    assert str(caught.value) == START_UP_REFUSAL.format(name="openai", error="ConnectionError")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # never the channel's message
    assert channel.calls == [START_UP_PROBE] and channel.closes == 1
    with pytest.raises(ChannelUnavailable) as unclosable:
        check_channel_answers(UnclosableChannel(), "hf")
    assert str(unclosable.value) == START_UP_REFUSAL.format(name="hf", error="TimeoutError")


def test_the_start_up_check_leaves_a_channel_that_answers_open(tmp_path: Path) -> None:
    channel = ProbedChannel(None)
    check_channel_answers(channel, "openai")
    assert channel.calls == [START_UP_PROBE] and channel.closes == 0
    agent, memory = copy_example(tmp_path)
    served = ProbedChannel(None)
    runtime = open_runtime(agent, memory, "memory:", llm=served, check_channel=True)
    assert served.calls == [START_UP_PROBE] and served.closes == 0  # asked once at open, still open
    assert runtime.turn("alice", "finance", "i", QUERIES[3]).response == "ready"
    assert len(served.calls) == 2
    runtime.close()
    assert served.closes == 1


def test_serve_answers_503_naming_the_channel_and_a_retry_costs_nothing(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from dpmem_ref.serve.app import create_app
    from dpmem_ref.serve.keys import load_keys
    from tests.serve.live import auth, write_keys

    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}", llm=FlakyChannel(2))
    keys_path, tokens = write_keys(tmp_path, {"finance": ["alice"]})
    client = TestClient(create_app(runtime, load_keys(keys_path)))
    body = {"user": "alice", "interaction": "i", "query": QUERIES[1]}
    headers = auth(tokens["finance"]) | {"Idempotency-Key": "turn-42"}
    for _ in range(2):
        down = client.post("/v1/turns", json=body, headers=headers)
        assert down.status_code == 503 and down.json()["field"] == "llm"
        assert "llm channel FlakyChannel" in down.json()["error"] and "Idempotency-Key" in down.json()["error"]
    charged = _spent(runtime)
    assert charged["debt"] == Fraction(1, 2)  # charged once, for the first attempt
    done = client.post("/v1/turns", json=body, headers=headers)
    assert done.status_code == 200 and done.json()["response"] and _spent(runtime) == charged
    bad = client.post("/v1/turns", json=body, headers=auth(tokens["finance"]) | {"Idempotency-Key": "bad key!"})
    assert bad.status_code == 422
    runtime.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("query", QUERIES[:3])
def test_a_retry_after_a_restart_or_on_another_replica_costs_nothing(backend: str, query: str, tmp_path: Path) -> None:
    from tests.runtime_fixtures import store_url

    agent, memory = copy_example(tmp_path)
    url = store_url(backend, tmp_path)
    first = open_runtime(agent, memory, url)
    answered = first.turn("alice", "finance", "i", query, turn_id="kept")  # answered, then the process restarts
    first.close()
    failing = open_runtime(agent, memory, url, llm=FlakyChannel(1))
    with pytest.raises(ChannelUnavailable):
        failing.turn("alice", "finance", "i", query, turn_id="lost")
    charged = _spent(failing)
    replica = open_runtime(agent, memory, url, seed=5)  # another process on the same ledger
    for turn_id, original in (("kept", answered), ("lost", None)):
        again = replica.turn("alice", "finance", "i", query, turn_id=turn_id)
        assert again.retried and _spent(replica) == charged  # no new charge
        if original is not None:
            assert (again.views, again.control, again.route) == (original.views, original.control, original.route)
    fresh = replica.turn("alice", "finance", "i", query, turn_id="new")  # a new id is a new turn
    assert not fresh.retried
    failing.close()
    replica.close()


class BrokenChannel:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def respond(self, query: str, views: Sequence[tuple[str, str]], prefix: Sequence[Any]) -> str:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        TimeoutError("slow"),
        RuntimeError("model crashed"),
        InputError("--llm", "a reachable endpoint", "ConnectError"),
        MemoryError(),
        ValueError("bad answer 12345"),
    ],
)
def test_every_channel_failure_is_named_and_charged_once(error: Exception, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", llm=BrokenChannel(error))
    for _ in range(3):
        with pytest.raises(ChannelUnavailable) as caught:
            runtime.turn("alice", "finance", "i", QUERIES[1], turn_id="t")
        assert "\n" not in str(caught.value) and "llm channel BrokenChannel" in str(caught.value)
        assert "12345" not in str(caught.value)  # never the channel's message
    assert _spent(runtime)["debt"] == Fraction(1, 2)  # three attempts, one charge
    runtime.close()
