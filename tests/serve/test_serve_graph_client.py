"""The LangGraph adapter's side of the wire (dpmem_ref.serve.graph), exactly: the request each
call sends, the one-line `DPMemError` of each refusal, the node's state update and the
`InputError`s of the adapter itself. The service is a recording HTTP server on a loopback port
of this process (the adapter speaks stdlib HTTP, so it needs a socket): it keeps every request
and answers what the test scripts. `test_serve_langgraph.py` runs the same adapter against a
real `dpmem serve`.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.serve.graph import VIEWS_HEADER, DPMemClient, DPMemError, dp_state, dp_views_node

TOKEN = "recipes-0123456789abcdef"
TURN = {
    "response": "",
    "control": [["food", "released"], ["finance", "fallback"]],
    "remaining": {"debt": "1/2", "diabetes": "3/4"},
    "route": "affordable-dinner",
    "views": [
        {"slot": "food", "view": "vegetarian", "text": "The user eats no meat."},
        {"slot": "finance", "view": "generic", "text": "No budget information released."},
    ],
}
TURN_BODY = {
    "user": "alice",
    "interaction": "langgraph",
    "query": "What should I make for dinner tonight?",
    "respond": False,
}


@attrs.frozen
class Seen:
    """One request as the service received it."""

    method: str
    path: str
    authorization: str | None
    content_type: str | None
    body: bytes


@attrs.define
class Answer:
    """What the service answers next: status, content type and body; `hold` (when set) is
    awaited, at most HOLD_S, before answering."""

    status: int = 200
    content_type: str = "application/json"
    body: bytes = json.dumps(TURN).encode()
    hold: threading.Event | None = None


HOLD_S = 3.0
"""How long a held answer waits at most for the test to let it go."""


class Service:
    """A recording HTTP service on 127.0.0.1 (a free port), served from a thread."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.answer = Answer()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.record_and_answer()

            def do_POST(self) -> None:
                self.record_and_answer()

            def record_and_answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = self.headers
                service.seen.append(
                    Seen(self.command, self.path, headers.get("Authorization"), headers.get("Content-Type"), body)
                )
                answer = service.answer
                if answer.hold is not None:
                    answer.hold.wait(HOLD_S)
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", answer.content_type)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except OSError:  # the client gave up (its timeout): nothing to answer
                    pass

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Service:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(HOLD_S)


@pytest.fixture
def service() -> Iterator[Service]:
    with Service() as running:
        yield running


def turn_request(body: dict[str, Any]) -> Seen:
    return Seen("POST", "/v1/turns", f"Bearer {TOKEN}", "application/json", json.dumps(body).encode())


def test_a_refusal_reads_as_one_line_with_status_and_message() -> None:
    error = DPMemError(403, "this application may not query this user")
    assert str(error) == "dpmem serve answered 403: this application may not query this user"
    assert (error.status, error.message) == (403, "this application may not query this user")


def test_the_client_keeps_its_base_url_without_trailing_slashes_and_a_minute_timeout() -> None:
    client = DPMemClient("http://127.0.0.1:8080//", TOKEN)
    assert (client.base_url, client.timeout_s) == ("http://127.0.0.1:8080", 60.0)
    # Only slashes go: a path prefix keeps its last character, whatever it is.
    assert (
        DPMemClient("https://gateway.example/dpmemX/", TOKEN, timeout_s=5.0).base_url
        == "https://gateway.example/dpmemX"
    )
    assert repr(DPMemClient("/sock/", TOKEN)) == "DPMemClient('/sock')"


def test_views_posts_one_views_only_turn_with_the_applications_token(service: Service) -> None:
    client = DPMemClient(service.url + "/", TOKEN)
    assert client.views("alice", "What should I make for dinner tonight?") == TURN
    assert client.views("bob", "Lunch?", interaction="chat-7") == TURN
    assert service.seen == [
        turn_request(TURN_BODY),
        turn_request({"user": "bob", "interaction": "chat-7", "query": "Lunch?", "respond": False}),
    ]


def test_budget_gets_the_remaining_budget_without_a_body(service: Service) -> None:
    service.answer = Answer(body=json.dumps({"user": "a b", "app": "recipes", "remaining": {"debt": "1/2"}}).encode())
    assert DPMemClient(service.url, TOKEN).budget("a b") == {"debt": "1/2"}
    assert service.seen == [Seen("GET", "/v1/budget?user=a%20b", f"Bearer {TOKEN}", None, b"")]


def test_the_client_ignores_the_environments_proxy(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    # The "proxy" is the service itself: a request sent through it would name the whole URL.
    for name in ("no_proxy", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", service.url)
    monkeypatch.setenv("HTTP_PROXY", service.url)
    DPMemClient(service.url, TOKEN).views("alice", "What should I make for dinner tonight?")
    assert [seen.path for seen in service.seen] == ["/v1/turns"]


def test_the_client_gives_up_after_its_timeout(service: Service) -> None:
    service.answer = Answer(hold=threading.Event())
    try:
        with pytest.raises(TimeoutError):
            DPMemClient(service.url, TOKEN, timeout_s=0.2).views("alice", "What should I make for dinner tonight?")
    finally:
        assert service.answer.hold is not None
        service.answer.hold.set()


@pytest.mark.parametrize(
    ("status", "content_type", "body", "message"),
    [
        (
            403,
            "application/json",
            b'{"error": "this application may not query this user", "field": "user"}',
            "this application may not query this user",
        ),
        (422, "application/json", b'{"field": "query"}', ""),
        (500, "application/json", b'["not", "an", "object"]', "no JSON error body"),
        (502, "text/html", b"<html>Bad Gateway</html>", "no JSON error body"),
    ],
)
def test_a_refused_request_raises_the_services_status_and_error(
    service: Service, status: int, content_type: str, body: bytes, message: str
) -> None:
    service.answer = Answer(status, content_type, body)
    with pytest.raises(DPMemError) as refused:
        DPMemClient(service.url, TOKEN).views("alice", "What should I make for dinner tonight?")
    assert (refused.value.status, refused.value.message, str(refused.value)) == (
        status,
        message,
        f"dpmem serve answered {status}: {message}",
    )


@pytest.fixture
def message_types() -> Any:
    """langchain-core's message classes (the node needs the extra `langgraph`)."""
    pytest.importorskip("langgraph.graph", reason="extra langgraph not installed")
    return pytest.importorskip("langchain_core.messages")


@pytest.mark.usefixtures("message_types")
def test_the_graph_state_is_messages_and_dpmem_both_optional() -> None:
    state: Any = dp_state()
    assert state.__name__ == "DPMemState"
    assert list(state.__annotations__) == ["messages", "dpmem"]
    assert (state.__total__, state.__required_keys__, state.__optional_keys__) == (
        False,
        frozenset(),
        frozenset({"messages", "dpmem"}),
    )


@pytest.mark.usefixtures("message_types")
def test_the_graph_state_names_the_missing_langgraph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.graph.message", None)
    with pytest.raises(InputError) as refused:
        dp_state()
    assert str(refused.value) == (
        "langgraph: expected langgraph installed (pip install 'dpmem-ref[langgraph]'), found no module 'langgraph.graph.message'"
    )


def test_the_node_answers_a_system_message_of_the_views_and_the_turns_public_fields(
    service: Service, message_types: Any
) -> None:
    update = dp_views_node(DPMemClient(service.url, TOKEN), user="alice")(
        {"messages": [message_types.HumanMessage("What should I make for dinner tonight?")]}
    )
    text = f"{VIEWS_HEADER}\n- food: The user eats no meat.\n- finance: No budget information released."
    public = {key: TURN[key] for key in ("route", "control", "remaining", "views")}  # never the service's response
    assert update == {"messages": [message_types.SystemMessage(content=text)], "dpmem": public}
    assert service.seen == [turn_request(TURN_BODY)]


def test_the_nodes_query_is_the_text_of_the_last_human_message_with_text(service: Service, message_types: Any) -> None:
    HumanMessage, AIMessage = message_types.HumanMessage, message_types.AIMessage
    node = dp_views_node(DPMemClient(service.url, TOKEN), user="alice", interaction="chat-7")
    parts = [
        {"type": "text", "text": "What should I "},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        "cook",  # a plain string block is text too
        {"type": "text", "text": "?"},
    ]
    node({"messages": [HumanMessage("earlier"), HumanMessage(parts), AIMessage("Soup."), {"role": "user"}]})
    node(
        {
            "messages": [
                HumanMessage("Lunch?"),
                AIMessage("Salad."),
                HumanMessage(""),
                HumanMessage([{"type": "image_url"}]),
            ]
        }
    )
    assert service.seen == [
        turn_request({"user": "alice", "interaction": "chat-7", "query": "What should I cook?", "respond": False}),
        turn_request({"user": "alice", "interaction": "chat-7", "query": "Lunch?", "respond": False}),
    ]


@pytest.mark.parametrize("history", ["absent", "empty", "no human text"])
def test_the_node_refuses_a_state_without_human_text_before_any_request(
    service: Service, message_types: Any, history: str
) -> None:
    node = dp_views_node(DPMemClient(service.url, TOKEN), user="alice")
    states = {
        "absent": {},
        "empty": {"messages": []},
        "no human text": {"messages": [message_types.AIMessage("hello"), message_types.HumanMessage("")]},
    }
    with pytest.raises(InputError) as refused:
        node(states[history])
    assert str(refused.value) == "messages: expected a last human message with text, found 'none'"
    assert service.seen == []


@pytest.mark.usefixtures("message_types")
def test_a_graph_run_appends_the_views_message_and_sets_dpmem(service: Service) -> None:
    from langgraph.graph import END, START, StateGraph

    graph: Any = StateGraph(dp_state())
    graph.add_node("views", dp_views_node(DPMemClient(service.url, TOKEN), user="alice"))
    graph.add_edge(START, "views")
    graph.add_edge("views", END)
    out = graph.compile().invoke({"messages": [("user", "What should I make for dinner tonight?")]})
    assert set(out) == {"messages", "dpmem"}
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("human", "What should I make for dinner tonight?"),
        ("system", f"{VIEWS_HEADER}\n- food: The user eats no meat.\n- finance: No budget information released."),
    ]
    assert out["dpmem"] == {key: TURN[key] for key in ("route", "control", "remaining", "views")}
    assert service.seen == [turn_request(TURN_BODY)]
