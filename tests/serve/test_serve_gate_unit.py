"""The ASGI gate of `dpmem serve` (dpmem_ref.serve.gate) called directly, message by message, in
front of a small ASGI application that records what reached it: each of its rules in the order
its docstring gives (413 before anything, 401 before the body, the body replayed whole, 503 past
the in-flight bound, a one-line 500, one access-log line). The live-server suites check the same
gate over a socket; these pin each rule so that a change to one fails by name."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Iterable
from typing import Any

import pytest

from dpmem_ref.serve import gate as gate_module
from dpmem_ref.serve.gate import (
    MAX_BODY_BYTES,
    PRINCIPAL,
    Gate,
    _declared_length,
    _read_bounded,
    bearer_token,
    error_body,
)
from dpmem_ref.serve.keys import Principal, parse_keys, token_hash

KEYS = parse_keys(
    {
        "owner": {"token_sha256": token_hash("owner-token")},
        "apps": {"recipes": {"token_sha256": token_hash("app-token"), "users": ["alice"]}},
    }
)
APP = Principal(kind="app", name="recipes", users=frozenset({"alice"}))


class Recorder:
    """An ASGI application that records its scope and every message it receives, then answers 200
    with the body it read (or raises `error`, after starting its answer when `started`)."""

    def __init__(self, error: Exception | None = None, started: bool = False) -> None:
        self.error, self.started = error, started
        self.scopes: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(dict(scope))
        message = await receive()
        self.received.append(message)
        if self.started:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        if self.error is not None:
            raise self.error
        if not self.started:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": message.get("body", b"")})


def http_scope(
    path: str = "/v1/turns", token: str | None = "app-token", headers: Iterable[tuple[bytes, bytes]] = ()
) -> dict[str, Any]:
    """The scope of a POST to `path`, with `token` as its bearer token (none if None) and `headers`."""
    authorization = [(b"authorization", f"Bearer {token}".encode())] if token is not None else []
    return {"type": "http", "method": "POST", "path": path, "headers": [*authorization, *headers]}


def call(
    gate: Gate,
    path: str = "/v1/turns",
    token: str | None = "app-token",
    chunks: Iterable[bytes] = (b"{}",),
    headers: Iterable[tuple[bytes, bytes]] = (),
    disconnect: bool = False,
    after: Iterable[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """One HTTP request through `gate`: the body in `chunks` (then a disconnect if `disconnect`,
    then the `after` messages); the messages the gate sent back."""
    scope = http_scope(path, token, headers)
    parts = list(chunks)
    incoming = [{"type": "http.request", "body": c, "more_body": i < len(parts) - 1} for i, c in enumerate(parts)]
    if disconnect:
        incoming = [{**m, "more_body": True} for m in incoming] + [{"type": "http.disconnect"}]
    incoming += list(after)
    return asyncio.run(exchange(gate, scope, incoming))


async def exchange(gate: Gate, scope: dict[str, Any], incoming: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`gate` called with `scope`, receiving `incoming` in order; the messages it sent back."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await gate(scope, receive, send)
    return sent


def answer(sent: list[dict[str, Any]]) -> tuple[int, dict[bytes, bytes], bytes]:
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"], sent
    return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]


def refusal(status: int, message: str, *extra: tuple[bytes, bytes]) -> tuple[int, dict[bytes, bytes], bytes]:
    body = error_body(message)
    return (
        status,
        {b"content-type": b"application/json", b"content-length": str(len(body)).encode(), **dict(extra)},
        body,
    )


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (b"Bearer app-token", "app-token"),
        (b"bearer   app-token  ", "app-token"),
        (b"BEARER app-token", "app-token"),
        (b"Basic app-token", None),
        (b"Bearer ", None),
        (b"Bearer", None),
        (b"app-token", None),
    ],
)
def test_bearer_token_reads_the_first_authorization_header(header: bytes, token: str | None) -> None:
    scope = {
        "headers": [(b"x-other", b"Bearer other"), (b"authorization", header), (b"authorization", b"Bearer second")]
    }
    assert bearer_token(scope) == token
    assert bearer_token({"headers": []}) is None and bearer_token({}) is None


def test_an_authenticated_request_reaches_the_application_with_its_principal_and_whole_body() -> None:
    app = Recorder()
    sent = call(Gate(app, KEYS), chunks=[b'{"user":', b' "alice"}'])
    assert answer(sent) == (200, {}, b'{"user": "alice"}')
    assert app.scopes[0][PRINCIPAL] == APP
    assert app.received == [{"type": "http.request", "body": b'{"user": "alice"}', "more_body": False}]


def test_after_the_replayed_body_the_application_reads_the_clients_own_messages() -> None:
    class ReadsTwice(Recorder):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            self.received += [await receive(), await receive()]
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    app = ReadsTwice()
    call(Gate(app, KEYS), after=[{"type": "http.disconnect"}])
    assert app.received == [{"type": "http.request", "body": b"{}", "more_body": False}, {"type": "http.disconnect"}]


@pytest.mark.parametrize("token", [None, "wrong-token", ""], ids=["no token", "an unknown token", "an empty token"])
def test_a_v1_path_without_a_known_token_is_401_before_the_body_is_read(token: str | None) -> None:
    app = Recorder()
    sent = call(Gate(app, KEYS), token=token, chunks=[b"x" * (MAX_BODY_BYTES + 1)])
    assert answer(sent) == refusal(401, "missing or unknown bearer token", (b"www-authenticate", b"Bearer"))
    assert app.scopes == []


@pytest.mark.parametrize("path", ["/healthz", "/openapi.json", "/docs", "/v1"])
def test_paths_outside_v1_need_no_token_and_carry_no_principal(path: str) -> None:
    app = Recorder()
    assert answer(call(Gate(app, KEYS), path=path, token=None))[0] == 200
    assert PRINCIPAL not in app.scopes[0]


def test_the_owner_token_is_the_owner() -> None:
    app = Recorder()
    call(Gate(app, KEYS), token="owner-token")
    assert app.scopes[0][PRINCIPAL] == Principal(kind="owner", name="owner")


def test_a_declared_length_over_the_bound_is_413_before_authentication() -> None:
    app = Recorder()
    sent = call(Gate(app, KEYS), token=None, headers=[(b"content-length", str(MAX_BODY_BYTES + 1).encode())])
    assert answer(sent) == refusal(413, f"request body over {MAX_BODY_BYTES} bytes")
    assert app.scopes == []


@pytest.mark.parametrize("declared", [b"not a number", str(MAX_BODY_BYTES).encode()])
def test_a_declared_length_within_the_bound_or_unreadable_is_checked_as_the_body_arrives(declared: bytes) -> None:
    app = Recorder()
    sent = call(Gate(app, KEYS), headers=[(b"content-length", declared)], chunks=[b"x" * MAX_BODY_BYTES, b"y"])
    assert answer(sent) == refusal(413, f"request body over {MAX_BODY_BYTES} bytes")
    assert app.scopes == []


def test_a_body_of_exactly_the_bound_is_served() -> None:
    app = Recorder()
    body = b"x" * MAX_BODY_BYTES
    sent = call(Gate(app, KEYS), chunks=[body[:1000], body[1000:]])
    assert answer(sent) == (200, {}, body)


def test_a_declared_length_of_exactly_the_bound_is_served() -> None:
    body = b"x" * MAX_BODY_BYTES
    sent = call(Gate(Recorder(), KEYS), headers=[(b"content-length", str(MAX_BODY_BYTES).encode())], chunks=[body])
    assert answer(sent) == (200, {}, body)


def test_the_declared_length_is_the_content_length_header_if_any() -> None:
    assert _declared_length({"headers": [(b"x-other", b"7"), (b"content-length", b"12")]}) == 12
    assert _declared_length({"headers": [(b"content-length", b"twelve")]}) is None
    assert _declared_length({"headers": []}) is None and _declared_length({}) is None


def test_the_body_read_before_a_disconnect_is_returned_whole_with_the_disconnect() -> None:
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"cd", "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    assert asyncio.run(_read_bounded(receive)) == (b"abcd", {"type": "http.disconnect"})


def test_a_client_that_leaves_before_its_body_is_complete_gets_nothing() -> None:
    app = Recorder()
    assert call(Gate(app, KEYS), chunks=[b"{"], disconnect=True) == []
    assert app.scopes == []


def test_past_the_in_flight_bound_the_answer_is_503_with_retry_after() -> None:
    app = Recorder()
    sent = call(Gate(app, KEYS, max_in_flight=0))
    assert answer(sent) == refusal(503, "server busy", (b"retry-after", b"1"))
    assert app.scopes == []


def test_the_in_flight_count_is_released_after_each_request() -> None:
    gate = Gate(Recorder(), KEYS, max_in_flight=1)
    for _ in range(3):
        assert answer(call(gate))[0] == 200
    assert gate.in_flight == 0
    failing = Gate(Recorder(error=RuntimeError("boom")), KEYS, max_in_flight=1)
    call(failing)
    assert failing.in_flight == 0


def test_every_request_inside_the_application_holds_a_slot_of_its_own() -> None:
    """With a bound of 2, two requests held inside the application fill it: a third is 503, and
    once they are answered the slots are free again."""

    async def scenario() -> tuple[int, list[int], int, int]:
        release, entered = asyncio.Event(), asyncio.Event()
        inside: list[int] = []

        class Holding(Recorder):
            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                inside.append(1)
                if len(inside) == 2:
                    entered.set()
                await release.wait()
                await super().__call__(scope, receive, send)

        gate = Gate(Holding(), KEYS, max_in_flight=2)

        def request() -> Any:
            return exchange(gate, http_scope(), [{"type": "http.request", "body": b"{}", "more_body": False}])

        held = [asyncio.create_task(request()) for _ in range(2)]
        await asyncio.wait_for(entered.wait(), timeout=5)  # both let in (a gate that refused one fails here)
        held_count = gate.in_flight
        third = asyncio.create_task(request())
        await asyncio.wait({third}, timeout=5)  # a 503 comes at once; a request let in would wait for release
        release.set()
        answered = [answer(await task)[0] for task in (third, *held)]
        return held_count, answered, gate.in_flight, answer(await request())[0]

    assert asyncio.run(scenario()) == (2, [503, 200, 200], 0, 200)


SECRET = "a value the message quotes"


def test_an_escaping_exception_is_a_one_line_500_and_a_log_line_without_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="dpmem.serve"):
        sent = call(Gate(Recorder(error=ValueError(SECRET)), KEYS))
    assert answer(sent) == refusal(500, "internal error")
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("internal error ValueError at ") and SECRET not in "".join(lines)
    assert len(lines) == 2 and lines[1].startswith("POST (no route) 500 ")


def test_the_internal_error_line_names_where_the_exception_was_raised(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="dpmem.serve"):
        call(Gate(Recorder(error=ValueError(SECRET)), KEYS))
    origin = caplog.records[0].getMessage().removeprefix("internal error ValueError at ")
    assert re.fullmatch(r"test_serve_gate_unit\.py:\d+ \(__call__\)", origin), origin  # Recorder's raise


def test_an_exception_after_the_answer_started_sends_no_second_start() -> None:
    sent = call(Gate(Recorder(error=ValueError(SECRET), started=True), KEYS))
    assert [m["type"] for m in sent] == ["http.response.start"] and sent[0]["status"] == 200


@pytest.mark.parametrize(
    ("path", "token", "template"),
    [
        ("/healthz", None, "/healthz"),
        ("/v1/turns", None, "(unauthenticated)"),
        ("/v1/users/alice/memory", "app-token", "(no route)"),
    ],
)
def test_the_access_log_line_names_the_method_a_template_the_status_and_the_time(
    caplog: pytest.LogCaptureFixture, path: str, token: str | None, template: str
) -> None:
    with caplog.at_level(logging.INFO, logger="dpmem.serve"):
        sent = call(Gate(Recorder(), KEYS), path=path, token=token)
    status = sent[0]["status"]
    (line,) = [record.getMessage() for record in caplog.records]
    head, _, elapsed = line.rpartition(" ")
    assert head == f"POST {template} {status}"
    assert elapsed.endswith("ms") and float(elapsed.removesuffix("ms")) >= 0


def test_a_routed_request_is_logged_by_its_route_template_never_its_path(caplog: pytest.LogCaptureFixture) -> None:
    class Routed(Recorder):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            scope["route"] = type("Route", (), {"path": "/v1/users/{user}/memory"})()
            await super().__call__(scope, receive, send)

    with caplog.at_level(logging.INFO, logger="dpmem.serve"):
        call(Gate(Routed(), KEYS), path="/v1/users/alice/memory")
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith("POST /v1/users/{user}/memory 200 ") and "alice" not in line


def test_a_request_under_a_mount_is_logged_by_the_mount_and_its_route(caplog: pytest.LogCaptureFixture) -> None:
    """The MCP server is mounted at /v1/mcp: its route's template is relative to the mount point
    (the scope's root_path), which the line puts in front; without a route, no root_path shows."""

    class Mounted(Recorder):
        def __init__(self, route_path: str | None) -> None:
            super().__init__()
            self.route_path = route_path

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            scope["root_path"] = "/v1/mcp"
            if self.route_path is not None:
                scope["route"] = type("Route", (), {"path": self.route_path})()
            await super().__call__(scope, receive, send)

    lines = []
    for route_path in ("/", None):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="dpmem.serve"):
            call(Gate(Mounted(route_path), KEYS), path="/v1/mcp/")
        lines += [record.getMessage().rpartition(" ")[0] for record in caplog.records]
    assert lines == ["POST /v1/mcp/ 200", "POST (no route) 200"]


def test_the_time_on_the_line_is_the_milliseconds_from_arrival_to_the_end_of_the_answer(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    readings = [100.0, 100.25]  # perf_counter when the request arrives, then once it is answered

    class Clock:
        @staticmethod
        def perf_counter() -> float:
            return readings.pop(0)

    monkeypatch.setattr(gate_module, "time", Clock)
    with caplog.at_level(logging.INFO, logger="dpmem.serve"):
        call(Gate(Recorder(), KEYS), path="/healthz", token=None)
    assert [record.getMessage() for record in caplog.records] == ["POST /healthz 200 250.0ms"] and readings == []


def test_a_scope_without_method_or_path_is_still_answered_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Not what an ASGI server sends (both keys are required): the gate still answers, and its
    line, written in a `finally`, shows "?" rather than raising there."""
    with caplog.at_level(logging.INFO, logger="dpmem.serve"):
        sent = asyncio.run(
            exchange(Gate(Recorder(), KEYS), {"type": "http", "headers": []}, [{"type": "http.request"}])
        )
    assert answer(sent)[0] == 200
    assert [record.getMessage().rpartition(" ")[0] for record in caplog.records] == ["? (no route) 200"]


def test_a_non_http_scope_passes_through_untouched() -> None:
    seen: list[str] = []

    async def lifespan_app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    async def nothing() -> dict[str, Any]:
        return {}

    async def ignore(message: Any) -> None:
        return None

    asyncio.run(Gate(lifespan_app, KEYS, max_in_flight=0)({"type": "lifespan"}, nothing, ignore))
    assert seen == ["lifespan"]


def test_error_body_is_one_line_of_json() -> None:
    assert error_body("no", "field") == b'{"error":"no","field":"field"}'
    assert json.loads(error_body("no")) == {"error": "no", "field": None}
