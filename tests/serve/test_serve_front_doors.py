"""The front doors of `dpmem serve`, spoken to by real clients against a live server on loopback:
the budget read (free), views-only turns, route and views in every answer, server-sent events,
the OpenAI-compatible chat endpoint (the official `openai` client), the MCP server (the official
`mcp` client SDK), the owner's memory reads, the /docs page; and concurrent turns of many
scopes followed by an independent SQL check (0 overruns, 0 uncharged releases, chain verifies).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.serve.live import DINNER, LiveServer, agent_of, auth, httpx, marked_memory, write_keys
from tests.serve.sqlcheck import chain_verifies, charged_slot, sqlite_check

DEADLINE_S = 0.25  # long enough that 16 turns run one after another would take 4 s
CHECKUP = "Remind me what to ask at my doctor appointment"
MANY = [f"app{n}" for n in range(16)]
APPS = {"recipes": ["alice", "bob"], "finance": ["alice"], "assistant": ["carol"], "stranger": [], **{name: [f"u{name}"] for name in MANY}}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str], list[str], Path]]:
    folder = tmp_path_factory.mktemp("doors")
    keys, tokens = write_keys(folder, APPS)
    memory, markers = marked_memory(folder)
    database = folder / "ledgers.db"
    with LiveServer(folder, keys, memory, f"sqlite:///{database}", extra=["--mcp", "--release-deadline", str(DEADLINE_S)]) as server:
        yield server, tokens, markers, database


def turn(client: Any, token: str, user: str, interaction: str, query: str, **extra: Any) -> dict[str, Any]:
    response = client.post("/v1/turns", headers=auth(token), json={"user": user, "interaction": interaction, "query": query, **extra})
    assert response.status_code == 200, response.text
    return dict(response.json())


def owner_ledgers(client: Any, owner: str, user: str) -> Any:
    response = client.get(f"/v1/users/{user}/ledgers", headers=auth(owner))
    assert response.status_code == 200
    return response.json()


# --- budget, views-only turns, route and views -------------------------------------------------


def test_the_budget_read_is_free_and_agrees_with_the_turns(served: Any) -> None:
    server, tokens, _, _ = served
    with server.client() as client:
        before = owner_ledgers(client, tokens["owner"], "bob")
        reads = [client.get("/v1/budget", params={"user": "bob"}, headers=auth(tokens["recipes"])) for _ in range(5)]
        assert all(r.status_code == 200 for r in reads)
        unchanged = {json.dumps(scope["scope"]): scope["ledgers"] for scope in before["scopes"]}
        for scope in owner_ledgers(client, tokens["owner"], "bob")["scopes"]:  # nothing spent by reading
            expected = unchanged.get(json.dumps(scope["scope"]), {a: "0" for a in scope["ledgers"]})
            assert {a: Fraction(v) for a, v in scope["ledgers"].items()} == {a: Fraction(v) for a, v in expected.items()}
        assert len({r.text for r in reads}) == 1  # reading spends nothing
        answer = turn(client, tokens["recipes"], "bob", "b1", DINNER)
        after = client.get("/v1/budget", params={"user": "bob"}, headers=auth(tokens["recipes"])).json()
        assert after == {"user": "bob", "app": "recipes", "remaining": answer["remaining"]}
        assert client.get("/v1/budget", params={"user": "bob"}, headers=auth(tokens["finance"])).status_code == 403
        assert client.get("/v1/budget", params={"user": "bob"}, headers=auth(tokens["owner"])).status_code == 403
        assert client.get("/v1/budget", params={"user": "b b"}, headers=auth(tokens["recipes"])).status_code == 422


def test_a_views_only_turn_releases_the_views_without_an_answer_and_is_charged(served: Any) -> None:
    server, tokens, markers, _ = served
    with server.client() as client:
        start = {a: Fraction(v) for a, v in client.get("/v1/budget", params={"user": "alice"}, headers=auth(tokens["finance"])).json()["remaining"].items()}
        body = turn(client, tokens["finance"], "alice", "v1", DINNER, respond=False)
        assert body["response"] == "" and body["route"] == "affordable-dinner"
        assert [v["slot"] for v in body["views"]] == [slot for slot, _ in body["control"]] == ["food", "finance"]
        assert all(v["text"] and v["view"] for v in body["views"])
        left = {a: Fraction(v) for a, v in body["remaining"].items()}
        assert sum(start.values()) > sum(left.values())  # a charged turn like any other
        full = turn(client, tokens["finance"], "alice", "v1", "hello")
        assert full["route"] is None and full["control"] is None and len(full["views"]) == 4
        assert full["response"] == " | ".join(v["text"] for v in full["views"])  # the echo channel: the released texts
        assert not any(m in json.dumps(body) + json.dumps(full) for m in markers)


def test_a_streamed_turn_sends_the_released_views_then_the_answer(served: Any) -> None:
    server, tokens, _, _ = served
    with server.client() as client:
        body = {"user": "alice", "interaction": "s1", "query": CHECKUP}
        with client.stream("POST", "/v1/turns/stream", headers=auth(tokens["recipes"]), json=body) as response:
            assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
            events = [
                (block.split("\n")[0].removeprefix("event: "), json.loads(block.split("\n")[1].removeprefix("data: ")))
                for block in response.read().decode().strip().split("\n\n")
            ]
        kinds = [kind for kind, _ in events]
        assert kinds[0] == "released" and kinds[-1] == "done" and set(kinds[1:-1]) == {"delta"}
        released = events[0][1]
        assert released["route"] == "checkup-reminder" and "response" not in released
        answer = "".join(data["text"] for kind, data in events if kind == "delta")
        assert answer == events[-1][1]["text"] == " | ".join(v["text"] for v in released["views"])
        refused = client.post("/v1/turns/stream", headers=auth(tokens["stranger"]), json=body)
        assert refused.status_code == 403 and refused.headers["content-type"] == "application/json"


# --- the OpenAI-compatible facade, with the official client ------------------------------------


def openai_client(server: LiveServer, token: str) -> Any:
    openai = pytest.importorskip("openai", reason="extra serve-test (openai) not installed")
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=token, http_client=httpx.Client(trust_env=False, timeout=60), max_retries=0)


def test_the_openai_client_gets_an_answer_and_the_dpmem_extension(served: Any) -> None:
    server, tokens, markers, _ = served
    client = openai_client(server, tokens["recipes"])
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": DINNER}]
    done = client.chat.completions.create(model="dpmem", messages=messages, user="alice", extra_body={"dpmem": {"interaction": "oa"}})
    extension = done.model_extra["dpmem"]
    assert done.model == "dpmem" and done.choices[0].finish_reason == "stop"
    assert extension["route"] == "affordable-dinner" and set(extension["remaining"]) == {"debt", "diabetes"}
    assert done.choices[0].message.content == " | ".join(v["text"] for v in extension["views"])
    by_header = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}], extra_headers={"X-DPMem-User": "bob"})
    assert by_header.model_extra["dpmem"]["route"] is None
    views_only = client.chat.completions.create(model="m", messages=messages, user="alice", extra_body={"dpmem": {"respond": False}})
    assert views_only.choices[0].message.content == "" and views_only.model_extra["dpmem"]["views"]
    assert not any(m in done.model_dump_json() for m in markers)


def test_the_openai_client_streams_the_answer(served: Any) -> None:
    server, tokens, _, _ = served
    client = openai_client(server, tokens["recipes"])
    chunks = list(client.chat.completions.create(model="dpmem", messages=[{"role": "user", "content": CHECKUP}], user="bob", stream=True))
    extension = chunks[0].model_extra["dpmem"]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert extension["route"] == "checkup-reminder"
    assert text == " | ".join(v["text"] for v in extension["views"])
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_the_openai_client_is_refused_with_a_bad_token_or_an_unlisted_user(served: Any) -> None:
    openai = pytest.importorskip("openai", reason="extra serve-test (openai) not installed")
    server, tokens, _, _ = served
    messages = [{"role": "user", "content": "hello"}]
    with pytest.raises(openai.AuthenticationError):
        openai_client(server, "not-a-token").chat.completions.create(model="m", messages=messages, user="alice")
    with pytest.raises(openai.PermissionDeniedError):
        openai_client(server, tokens["finance"]).chat.completions.create(model="m", messages=messages, user="bob")
    with pytest.raises(openai.UnprocessableEntityError):  # no user anywhere
        openai_client(server, tokens["recipes"]).chat.completions.create(model="m", messages=messages)
    with pytest.raises(openai.UnprocessableEntityError):  # no user message
        openai_client(server, tokens["recipes"]).chat.completions.create(model="m", messages=[{"role": "system", "content": "x"}], user="alice")


# --- the MCP server, with the official SDK client ---------------------------------------------


async def mcp_calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    httpx2 = pytest.importorskip("httpx2")
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, trust_env=False, timeout=60) as http:
        async with streamable_http_client(f"{url}/v1/mcp/", http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                names = [tool.name for tool in (await session.list_tools()).tools]
                return [names, *[await session.call_tool(name, arguments) for name, arguments in calls]]


def test_the_mcp_client_asks_the_agent_with_the_applications_token_and_budget(served: Any) -> None:
    pytest.importorskip("mcp", reason="extra serve (mcp) not installed")
    server, tokens, markers, _ = served
    calls = [
        ("budget", {"user": "carol"}),
        ("ask", {"user": "carol", "query": DINNER, "interaction": "mcp1"}),
        ("budget", {"user": "carol"}),
        ("ask", {"user": "bob", "query": DINNER}),  # assistant may not query bob
        ("ask", {"user": "carol", "query": "", "respond": False}),
    ]
    names, before, asked, after, refused, empty = asyncio.run(mcp_calls(server.url, tokens["assistant"], calls))
    assert sorted(names) == ["ask", "budget"]
    assert not before.is_error and not asked.is_error, (before.content, asked.content)
    answer = asked.structured_content
    assert answer["route"] == "affordable-dinner" and answer["response"] == " | ".join(v["text"] for v in answer["views"])
    assert after.structured_content["remaining"] == answer["remaining"] != before.structured_content["remaining"]
    assert refused.is_error and "may not query this user" in refused.content[0].text
    assert empty.is_error and "query: expected" in empty.content[0].text
    with server.client() as client:  # the same scope as POST /v1/turns
        budget = client.get("/v1/budget", params={"user": "carol"}, headers=auth(tokens["assistant"])).json()
    assert budget["remaining"] == answer["remaining"]
    assert not any(m in str(asked.structured_content) for m in markers)
    log = server.log_text()
    assert "POST /v1/mcp/ 200" in log and not any(m in log for m in markers) and DINNER not in log


def test_the_mcp_endpoint_needs_an_application_token(served: Any) -> None:
    pytest.importorskip("mcp", reason="extra serve (mcp) not installed")
    server, tokens, _, _ = served
    with server.client() as client:
        assert client.post("/v1/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    _, owner_asks = asyncio.run(mcp_calls(server.url, tokens["owner"], [("ask", {"user": "alice", "query": "hi"})]))
    assert owner_asks.is_error and "application token" in owner_asks.content[0].text


# --- the owner's memory reads, /docs ------------------------------------------------------------


def test_the_owner_lists_reads_and_exports_memory_and_applications_cannot(served: Any) -> None:
    server, tokens, markers, _ = served
    with server.client() as client:
        listed = client.get("/v1/users/alice/memory", headers=auth(tokens["owner"])).json()["items"]
        assert {m for m in markers if any(m in item["text"] for item in listed)} == set(markers)
        first = listed[0]
        assert client.get(f"/v1/users/alice/memory/{first['id']}", headers=auth(tokens["owner"])).json() == first
        missing = client.get("/v1/users/alice/memory/nope", headers=auth(tokens["owner"]))
        assert missing.status_code == 404 and missing.json()["field"] is None
        export = client.get("/v1/users/alice/export", headers=auth(tokens["owner"]))
        assert export.headers["content-type"].startswith("application/x-ndjson")
        assert [json.loads(line)["id"] for line in export.text.splitlines()] == [item["id"] for item in listed]
        for token in (tokens["recipes"], tokens["stranger"]):
            for path in ("/v1/users/alice/memory", f"/v1/users/alice/memory/{first['id']}", "/v1/users/alice/export"):
                refused = client.get(path, headers=auth(token))
                assert refused.status_code == 403 and not any(m in refused.text for m in markers)
        page = client.get("/docs")
        assert page.status_code == 200 and "swagger" in page.text.lower() and "/openapi.json" in page.text


# --- concurrent scopes, then the independent SQL check ------------------------------------------


def test_concurrent_turns_of_many_scopes_overlap_and_the_ledger_checks_out(served: Any) -> None:
    server, tokens, markers, database = served
    received: list[tuple[str, str, dict[str, Any]]] = []
    queries = [DINNER, CHECKUP, "Help me with my budget and bills", "hello"]

    def one(app: str, index: int) -> tuple[float, dict[str, Any]]:
        with server.client() as client:
            started = time.monotonic()
            body = turn(client, tokens[app], f"u{app}", f"load{index}", queries[index % len(queries)] if index >= 0 else "hello")
            return time.monotonic() - started, body

    with ThreadPoolExecutor(len(MANY)) as pool:  # warm, free (no match): every scope's session opened once
        list(pool.map(one, MANY, [-1] * len(MANY)))
        started = time.monotonic()
        rounds = [list(pool.map(one, MANY, range(len(MANY)))) for _ in range(3)]
        wall = time.monotonic() - started
    for results in rounds:
        received += [(f"u{app}", app, answer) for app, (_, answer) in zip(MANY, results, strict=True)]
    serialised = 3 * len(MANY) * DEADLINE_S  # each turn answers no earlier than its deadline
    assert all(seconds >= DEADLINE_S for results in rounds for seconds, _ in results)
    assert wall < serialised / 3, (wall, serialised)  # turns of different scopes ran side by side
    checked = sqlite_check(database, received, agent_of(server.keys))
    assert checked["overruns"] == 0 and checked["uncharged"] == 0, checked
    assert checked["charged_received"] > 0, checked
    assert chain_verifies(database)
    # The check is not vacuous: a charged release received more often than the ledger charged it
    # (a copy of a real answer, claimed once more) is counted as uncharged.
    forged = next(item for item in received if item[2]["control"] and ["food", "released"] in item[2]["control"])
    claimed = sum(status == "released" and charged_slot(slot) for slot, status in forged[2]["control"])
    assert claimed >= 1 and sqlite_check(database, [*received, forged], agent_of(server.keys))["uncharged"] == claimed
    assert not any(m in json.dumps(received) for m in markers)


def test_the_openapi_page_names_the_front_doors(served: Any) -> None:
    server, _, _, _ = served
    with server.client() as client:
        paths = set(client.get("/openapi.json").json()["paths"])
    assert {"/v1/budget", "/v1/turns/stream", "/v1/chat/completions", "/v1/users/{user}/export", "/v1/users/{user}/memory/{item_id}"} <= paths
