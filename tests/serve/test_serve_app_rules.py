"""Rules of the served application that a client sees, in process (the real runtime and the ASGI
app behind its gate, Starlette's TestClient): the OpenAPI document's description and the chat
route's documented answers, the routes that are not served (no ReDoc page, no MCP server unless
asked for), the default release deadline, a malformed field's name cut to 64 characters, and the
compact one-line JSON of every server-sent event (a chat chunk's: test_serve_in_process.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="extra serve not installed")
from starlette.testclient import TestClient  # noqa: E402

from dpmem_ref.mechanism.timing import DEFAULT_DURABLE_TURN_DEADLINE_S  # noqa: E402
from dpmem_ref.runtime import AgentRuntime  # noqa: E402
from dpmem_ref.serve.app import create_app  # noqa: E402
from dpmem_ref.serve.keys import load_keys  # noqa: E402
from tests.serve.live import DINNER, agent_of, auth, marked_memory, write_keys  # noqa: E402
from tests.serve.test_serve_in_process import Echo  # noqa: E402  (the same channel)

ERROR_BODY = {"$ref": "#/components/schemas/ErrorBody"}


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[AgentRuntime, Any, dict[str, str]]]:
    """The real runtime (in-memory ledger store, the Echo channel), its keys and the tokens."""
    keys_path, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    runtime = AgentRuntime.open(
        str(agent_of(keys_path)), memory=str(memory), store_url="memory:", llm=Echo(), turn_deadline_s=None
    )
    try:
        yield runtime, load_keys(keys_path), tokens
    finally:
        runtime.close()


@pytest.fixture
def served(opened: tuple[AgentRuntime, Any, dict[str, str]]) -> tuple[TestClient, dict[str, str]]:
    runtime, keys, tokens = opened
    return TestClient(create_app(runtime, keys, deadline_s=None)), tokens


def test_the_openapi_document_describes_the_service(served: tuple[TestClient, dict[str, str]]) -> None:
    """The API's description is the documented sentence, exactly."""
    client, _ = served
    info = client.get("/openapi.json").json()["info"]
    assert info["description"] == (
        "DP-MemView behind HTTP: applications query, the owner manages memory (docs/serve.md)."
    )


def test_the_chat_route_documents_each_refusal_as_an_error_body(served: tuple[TestClient, dict[str, str]]) -> None:
    """POST /v1/chat/completions documents 200 and exactly 401, 403, 413, 422 and 503, each an ErrorBody."""
    client, _ = served
    answers = client.get("/openapi.json").json()["paths"]["/v1/chat/completions"]["post"]["responses"]
    assert sorted(answers) == ["200", "401", "403", "413", "422", "503"]
    for code in ("401", "403", "413", "422", "503"):
        assert answers[code]["content"]["application/json"]["schema"] == ERROR_BODY, code


def test_no_redoc_page_is_served(served: tuple[TestClient, dict[str, str]]) -> None:
    """Only /docs is served as API documentation: /redoc is no route, even with a valid token."""
    client, tokens = served
    assert client.get("/docs").status_code == 200
    missing = client.get("/redoc", headers=auth(tokens["recipes"]))
    assert (missing.status_code, missing.json()) == (404, {"error": "Not Found", "field": None})


def test_without_mcp_there_is_no_mcp_server(opened: tuple[AgentRuntime, Any, dict[str, str]]) -> None:
    """create_app mounts the MCP server only when asked (`mcp=True`): by default /v1/mcp/ is no route."""
    runtime, keys, tokens = opened
    client = TestClient(create_app(runtime, keys, deadline_s=None))
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {**auth(tokens["recipes"]), "Accept": "application/json, text/event-stream"}
    missing = client.post("/v1/mcp/", headers=headers, json=initialize)
    assert (missing.status_code, missing.json()) == (404, {"error": "Not Found", "field": None})


def test_a_turn_is_answered_no_earlier_than_the_default_release_deadline(
    opened: tuple[AgentRuntime, Any, dict[str, str]],
) -> None:
    """Without `deadline_s`, the app waits DEFAULT_DURABLE_TURN_DEADLINE_S from the kernel's start
    before releasing a turn: no turn is answered sooner, however fast the kernel is."""
    runtime, keys, tokens = opened
    client = TestClient(create_app(runtime, keys))
    elapsed = []
    for interaction in ("i1", "i2", "i3"):
        started = time.monotonic()
        answered = client.post(
            "/v1/turns",
            headers=auth(tokens["recipes"]),
            json={"user": "bob", "interaction": interaction, "query": DINNER, "respond": False},
        )
        elapsed.append(time.monotonic() - started)
        assert answered.status_code == 200, answered.text
    assert min(elapsed) >= DEFAULT_DURABLE_TURN_DEADLINE_S - 0.001, elapsed


def test_a_malformed_field_is_named_by_its_location_each_part_cut_to_64_characters(
    served: tuple[TestClient, dict[str, str]],
) -> None:
    """An unknown `dpmem` option is refused with 422 naming body.dpmem.<key>, the key cut to 64 characters."""
    client, tokens = served
    key = "k" * 100
    refused = client.post(
        "/v1/chat/completions",
        headers={**auth(tokens["recipes"]), "X-DPMem-User": "alice"},
        json={"messages": [{"role": "user", "content": DINNER}], "dpmem": {key: True}},
    )
    field = "body.dpmem." + "k" * 64
    assert refused.status_code == 422
    assert refused.json() == {"error": f"{field}: Extra inputs are not permitted", "field": field}


def compact(line: str, prefix: str) -> Any:
    """The JSON of a `prefix` line, asserted to be written compactly (no space after , or :)."""
    assert line.startswith(prefix), line
    data = json.loads(line.removeprefix(prefix))
    assert line == prefix + json.dumps(data, separators=(",", ":")), line
    return data


def test_each_streamed_turn_event_carries_one_line_of_compact_json(served: tuple[TestClient, dict[str, str]]) -> None:
    """/v1/turns/stream: `event: <kind>` then `data: <JSON>` with no space after , or :, blank-line separated."""
    client, tokens = served
    body = {"user": "alice", "interaction": "i", "query": DINNER}
    answered = client.post("/v1/turns/stream", headers=auth(tokens["recipes"]), json=body)
    assert answered.status_code == 200
    blocks = answered.text.split("\n\n")
    assert blocks[-1] == ""
    kinds = []
    for block in blocks[:-1]:
        event, data = block.split("\n")
        kinds.append(event.removeprefix("event: "))
        compact(data, "data: ")
    assert kinds == ["released", "delta", "delta", "delta", "done"]
    assert answered.text.count('"text":"first, "') == 1 and '"text":"second: "' in answered.text
