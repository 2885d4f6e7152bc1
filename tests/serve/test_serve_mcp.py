"""What an MCP client sees of `dpmem serve --mcp` at /v1/mcp/, in process (the real runtime and
ASGI app with its lifespan, raw JSON-RPC over Starlette's TestClient): the server's name and
instructions in `initialize`, the two tools and their descriptions in `tools/list`, plain JSON
answers with no session (stateless: every request stands alone), any Host and Origin accepted
(the bearer token is the guard, docs/serve.md), the refusals' exact texts, and nothing below a warning
from the SDK in the log (its INFO lines may name tool arguments).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mcp", reason="extra serve (mcp) not installed")
pytest.importorskip("fastapi", reason="extra serve not installed")
from starlette.testclient import TestClient  # noqa: E402

from dpmem_ref.runtime import AgentRuntime  # noqa: E402
from dpmem_ref.serve.app import create_app  # noqa: E402
from dpmem_ref.serve.keys import load_keys  # noqa: E402
from tests.serve.live import agent_of, auth, marked_memory, write_keys  # noqa: E402

INSTRUCTIONS = "A personal agent behind DP-MemView: each ask spends this application's budget."
DESCRIPTIONS = {
    "ask": "Ask the user's agent one question (one DP-MemView turn in this application's budget scope).",
    "budget": "This application's remaining budget for the user (free: no turn, no charge).",
}
ACCEPT = {"Accept": "application/json, text/event-stream"}
FOREIGN = {"Host": "dpmem.example.org", "Origin": "https://elsewhere.example.org"}


@pytest.fixture
def mcp_client(tmp_path: Any) -> Iterator[tuple[TestClient, dict[str, str]]]:
    # One app per test, not per module: mutmut books a module fixture's calls to the first test
    # that sets it up, so the app's name, instructions and log level would be checked by one test only.
    folder = tmp_path
    keys_path, tokens = write_keys(folder)
    memory, _ = marked_memory(folder)
    sdk_log = logging.getLogger("mcp")
    level = sdk_log.level
    sdk_log.setLevel(logging.NOTSET)  # whatever the SDK's log level was, the app sets its own
    runtime = AgentRuntime.open(
        str(agent_of(keys_path)), memory=str(memory), store_url="memory:", seed=0, turn_deadline_s=None
    )
    try:
        with TestClient(create_app(runtime, load_keys(keys_path), mcp=True, deadline_s=None)) as client:
            yield client, tokens
    finally:
        runtime.close()
        sdk_log.setLevel(level)


def rpc(
    client: TestClient,
    token: str,
    method: str,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, **({} if params is None else {"params": params})}
    return client.post("/v1/mcp/", headers={**auth(token), **ACCEPT, **(headers or {})}, json=body)


def tool_call(client: TestClient, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = rpc(client, token, "tools/call", {"name": name, "arguments": arguments})
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["result"])


def test_initialize_names_the_server_and_its_instructions_in_plain_json_without_a_session(mcp_client: Any) -> None:
    client, tokens = mcp_client
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}
    answer = rpc(client, tokens["recipes"], "initialize", hello)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in answer.headers
    result = answer.json()["result"]
    assert (result["serverInfo"]["name"], result["instructions"]) == ("dpmem", INSTRUCTIONS)


def test_each_request_stands_alone_whatever_its_host_and_origin(mcp_client: Any) -> None:
    client, tokens = mcp_client
    listed = rpc(client, tokens["recipes"], "tools/list", headers=FOREIGN)  # no initialize, no session id
    assert listed.status_code == 200, listed.text
    assert listed.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in listed.headers
    assert {tool["name"]: tool["description"] for tool in listed.json()["result"]["tools"]} == DESCRIPTIONS


def test_the_tools_refuse_an_unlisted_user_and_a_non_application_token_with_exact_texts(mcp_client: Any) -> None:
    client, tokens = mcp_client
    for token, arguments, text in [
        (tokens["recipes"], {"user": "carol"}, "this application may not query this user"),
        (tokens["owner"], {"user": "alice"}, "this tool takes an application token"),
    ]:
        result = tool_call(client, token, "budget", arguments)
        assert (result["isError"], result["content"]) == (
            True,
            [{"type": "text", "text": f"Error executing tool budget: {text}"}],
        )


def test_the_sdk_logs_nothing_below_a_warning(mcp_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    client, tokens = mcp_client
    caplog.set_level(logging.DEBUG)
    refused = tool_call(client, tokens["recipes"], "ask", {"user": "carol", "query": "which pills do I take"})
    assert refused["isError"] is True
    answered = tool_call(client, tokens["recipes"], "budget", {"user": "alice"})
    assert answered["structuredContent"]["app"] == "recipes"
    sdk_lines = [r for r in caplog.records if r.name.split(".")[0] == "mcp" and r.levelno < logging.WARNING]
    assert sdk_lines == [] and "which pills" not in caplog.text
