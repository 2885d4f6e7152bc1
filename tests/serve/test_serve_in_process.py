"""The served answer's wire forms, in process (the real runtime, the ASGI app behind its gate and
an LLM channel that answers with its query and pieces): the `/v1/turns/stream` events in order
with their exact data, the chat facade's query (the last user message's text parts, nothing
else) and its refusals, and the API's title. The live-server suites check the same routes across
a real socket; these pin each form so that a change to one fails by name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="extra serve not installed")
from starlette.testclient import TestClient  # noqa: E402

from dpmem_ref.runtime import AgentRuntime  # noqa: E402
from dpmem_ref.serve.app import create_app  # noqa: E402
from dpmem_ref.serve.keys import load_keys  # noqa: E402
from tests.serve.live import DINNER, agent_of, auth, marked_memory, write_keys  # noqa: E402

PIECES = ("first, ", "second: ", "third")  # a comma and a colon in the text: compact JSON keeps them


class Echo:
    """An LLM channel that answers `query=<query>` (respond) or streams PIECES (stream)."""

    def respond(self, query: str, views: Any, prefix: Any) -> str:
        return f"query={query}"

    def stream(self, query: str, views: Any, prefix: Any) -> Iterator[str]:
        yield from PIECES


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    keys_path, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    runtime = AgentRuntime.open(
        str(agent_of(keys_path)), memory=str(memory), store_url="memory:", llm=Echo(), turn_deadline_s=None
    )
    try:
        yield TestClient(create_app(runtime, load_keys(keys_path), deadline_s=None)), tokens
    finally:
        runtime.close()


def events(stream: str) -> list[tuple[str, Any]]:
    """Server-sent events as (event, data): each `event:` line with its one `data:` line of JSON."""
    found = []
    for block in stream.split("\n\n"):
        if not block:
            continue
        event, data = block.split("\n")
        assert event.startswith("event: ") and data.startswith("data: "), block
        found.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return found


def test_a_streamed_turn_is_released_then_its_pieces_then_done(served: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = served
    body = {"user": "alice", "interaction": "i", "query": DINNER}
    answered = client.post("/v1/turns/stream", headers=auth(tokens["recipes"]), json=body)
    assert answered.status_code == 200 and answered.headers["content-type"].startswith("text/event-stream")
    assert answered.headers["cache-control"] == "no-store"
    assert answered.text.endswith("\n\n")
    sent = events(answered.text)
    assert [event for event, _ in sent] == ["released", "delta", "delta", "delta", "done"]
    released = sent[0][1]
    assert set(released) == {"route", "control", "remaining", "views"}  # the answer comes as pieces, not here
    assert released["control"] == [["food", "released"], ["finance", "released"]]
    assert [data for _, data in sent[1:]] == [{"text": piece} for piece in PIECES] + [{"text": "".join(PIECES)}]
    # the same turn without streaming releases the same kind of views and charges the same scope
    plain = client.post("/v1/turns", headers=auth(tokens["recipes"]), json={**body, "interaction": "j"})
    assert plain.status_code == 200 and [v["slot"] for v in plain.json()["views"]] == [
        v["slot"] for v in released["views"]
    ]


def chat(client: TestClient, token: str, messages: list[dict[str, Any]]) -> Any:
    return client.post(
        "/v1/chat/completions", headers={**auth(token), "X-DPMem-User": "alice"}, json={"messages": messages}
    )


TEXT_PART = {"type": "text", "text": "dinner "}
QUERIES = {
    "a string": ([{"role": "user", "content": "dinner tonight?"}], "dinner tonight?"),
    "the last user message": (
        [
            {"role": "user", "content": "an earlier question"},
            {"role": "assistant", "content": "an answer"},
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "dinner tonight?"},
            {"role": "assistant", "content": "a draft of my own"},
        ],
        "dinner tonight?",
    ),
    "its text parts joined, others left out": (
        [
            {
                "role": "user",
                "content": [
                    TEXT_PART,
                    {"type": "image_url", "text": "not text"},
                    {"type": "text"},
                    {"type": "text", "text": "tonight?"},
                ],
            }
        ],
        "dinner tonight?",
    ),
}


@pytest.mark.parametrize(("messages", "query"), QUERIES.values(), ids=list(QUERIES))
def test_the_chat_query_is_the_last_user_messages_text(
    served: tuple[TestClient, dict[str, str]], messages: list[dict[str, Any]], query: str
) -> None:
    client, tokens = served
    answered = chat(client, tokens["recipes"], messages)
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["content"] == f"query={query}"


NO_QUERY = {
    "no user message": [{"role": "system", "content": "be brief"}, {"role": "assistant", "content": "hello"}],
    "the last user message empty, an earlier one not": [
        {"role": "user", "content": "dinner tonight?"},
        {"role": "user", "content": ""},
    ],
    "the last user message without text parts": [
        {"role": "user", "content": "dinner tonight?"},
        {"role": "user", "content": [{"type": "image_url", "text": "a picture"}]},
    ],
    "the last user message without content": [{"role": "user", "content": "dinner tonight?"}, {"role": "user"}],
}


@pytest.mark.parametrize("messages", NO_QUERY.values(), ids=list(NO_QUERY))
def test_a_chat_without_a_last_user_message_with_text_is_refused(
    served: tuple[TestClient, dict[str, str]], messages: list[dict[str, Any]]
) -> None:
    client, tokens = served
    refused = chat(client, tokens["recipes"], messages)
    assert refused.status_code == 422
    assert refused.json()["error"] == "messages: expected a last user message with text"


def chunks(stream: str) -> list[Any]:
    """An OpenAI chat stream's `data:` lines as JSON, up to its `[DONE]`; each line asserted to be
    one line of compact JSON (no space after , or :)."""
    blocks = [block for block in stream.split("\n\n") if block]
    assert blocks[-1] == "data: [DONE]" and all(block.startswith("data: ") for block in blocks), stream
    sent = [json.loads(block.removeprefix("data: ")) for block in blocks[:-1]]
    assert blocks[:-1] == ["data: " + json.dumps(chunk, separators=(",", ":")) for chunk in sent]
    return sent


@pytest.mark.parametrize("respond", [True, False], ids=["answered in pieces", "views only"])
def test_a_streamed_chat_is_the_openai_chunk_sequence(served: tuple[TestClient, dict[str, str]], respond: bool) -> None:
    client, tokens = served
    answered = client.post(
        "/v1/chat/completions",
        headers={**auth(tokens["recipes"]), "X-DPMem-User": "alice"},
        json={
            "model": "m1",
            "stream": True,
            "messages": [{"role": "user", "content": DINNER}],
            "dpmem": {"respond": respond},
        },
    )
    assert answered.status_code == 200 and answered.headers["content-type"].startswith("text/event-stream")
    assert answered.headers["cache-control"] == "no-store"
    sent = chunks(answered.text)
    ident, created = sent[0]["id"], sent[0]["created"]
    assert ident.startswith("chatcmpl-") and isinstance(created, int)
    for chunk in sent:
        assert (chunk["id"], chunk["object"], chunk["created"], chunk["model"]) == (
            ident,
            "chat.completion.chunk",
            created,
            "m1",
        )
        assert [choice["index"] for choice in chunk["choices"]] == [0]
    deltas = [(chunk["choices"][0]["delta"], chunk["choices"][0]["finish_reason"]) for chunk in sent]
    pieces = [({"content": piece}, None) for piece in PIECES] if respond else []
    assert deltas == [({"role": "assistant", "content": ""}, None), *pieces, ({}, "stop")]
    extension = sent[0]["dpmem"]
    assert set(extension) == {"route", "control", "remaining", "views"}
    assert extension["control"] == [["food", "released"], ["finance", "released"]]
    assert all("dpmem" not in chunk for chunk in sent[1:])


def test_the_api_is_titled(served: tuple[TestClient, dict[str, str]]) -> None:
    client, _ = served
    info = client.get("/openapi.json").json()["info"]
    assert (info["title"], info["version"]) == ("dpmem serve", "1")


def test_mounted_without_the_gate_the_routes_still_refuse_a_request_without_a_principal(tmp_path: Path) -> None:
    keys_path, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    runtime = AgentRuntime.open(
        str(agent_of(keys_path)), memory=str(memory), store_url="memory:", llm=Echo(), turn_deadline_s=None
    )
    try:
        api = create_app(runtime, load_keys(keys_path), deadline_s=None).app  # the FastAPI app inside the gate
        client = TestClient(api)
        body = {"user": "alice", "interaction": "i", "query": DINNER}
        for refused in (
            client.post("/v1/turns", headers=auth(tokens["recipes"]), json=body),
            client.get("/v1/users/alice/memory", headers=auth(tokens["owner"])),
        ):
            assert refused.status_code == 401 and refused.json()["error"] == "missing or unknown bearer token"
    finally:
        runtime.close()


def test_each_endpoint_takes_its_own_kind_of_token_and_an_application_only_its_users(
    served: tuple[TestClient, dict[str, str]],
) -> None:
    client, tokens = served
    turn = {"user": "alice", "interaction": "i", "query": DINNER}
    refusals = {
        "this endpoint takes an application token": [
            client.post("/v1/turns", headers=auth(tokens["owner"]), json=turn),
            client.post("/v1/turns/stream", headers=auth(tokens["owner"]), json=turn),
            chat(client, tokens["owner"], [{"role": "user", "content": DINNER}]),
        ],
        "this endpoint takes the owner token": [
            client.get("/v1/users/alice/memory", headers=auth(tokens["recipes"])),
            client.get("/v1/users/alice/ledgers", headers=auth(tokens["recipes"])),
        ],
        "this application may not query this user": [
            client.post("/v1/turns", headers=auth(tokens["finance"]), json={**turn, "user": "bob"}),
            client.post("/v1/turns/stream", headers=auth(tokens["finance"]), json={**turn, "user": "bob"}),
            client.post(
                "/v1/chat/completions",
                headers={**auth(tokens["finance"]), "X-DPMem-User": "bob"},
                json={"messages": [{"role": "user", "content": DINNER}]},
            ),
        ],
    }
    for message, answers in refusals.items():
        for refused in answers:
            assert (refused.status_code, refused.json()["error"]) == (403, message), refused.text
