"""A LangGraph integration on the application's side of `dpmem serve` (extra `langgraph`).

    from dpmem_ref.serve.graph import DPMemClient, dp_state, dp_views_node
    client = DPMemClient("http://127.0.0.1:8080", token=RECIPES_TOKEN)
    graph = StateGraph(dp_state())
    graph.add_node("views", dp_views_node(client, user="alice"))
    graph.add_node("model", call_my_model)        # prompts the application's own model
    graph.add_edge(START, "views"); graph.add_edge("views", "model"); graph.add_edge("model", END)

`dp_views_node` is a LangGraph node: it takes the last human message of the state's
`messages` as the query, runs one views-only turn of the service (`POST /v1/turns` with
`"respond": false`, the application's own token, scope and budget: each call is one charged
turn) and returns a system message holding the released view texts (one per line) plus the
turn's public fields under `dpmem` (route, control, remaining, views). The application's model
therefore receives the conversation and the released views, never raw memory: the node holds
only the application's token, which cannot reach memory (docs/serve.md, threat model).

Stdlib HTTP only (no proxy from the environment is used); langchain-core is imported when a
node runs. Errors from the service are raised as `DPMemError` with its status and one-line
message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import missing

VIEWS_HEADER = "Released DP-MemView views (what the agent may use about the user):"


class DPMemError(Exception):
    """The service refused a request: `status` and its one-line `message`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"dpmem serve answered {status}: {message}")
        self.status, self.message = status, message


class DPMemClient:
    """The application's view of `dpmem serve`: its base URL and its own token."""

    def __init__(self, base_url: str, token: str, timeout_s: float = 60.0) -> None:
        self.base_url, self._token, self.timeout_s = base_url.rstrip("/"), token, timeout_s
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def __repr__(self) -> str:  # never the token
        return f"DPMemClient({self.base_url!r})"

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            try:
                message = str(json.loads(error.read()).get("error", ""))
            except (ValueError, AttributeError):
                message = "no JSON error body"
            raise DPMemError(error.code, message) from None

    def views(self, user: str, query: str, interaction: str = "langgraph") -> dict[str, Any]:
        """One views-only turn: {"route", "control", "remaining", "views": [{"slot", "view", "text"}], ...}."""
        return dict(self._call("POST", "/v1/turns", {"user": user, "interaction": interaction, "query": query, "respond": False}))

    def budget(self, user: str) -> dict[str, str]:
        """This application's remaining budget for `user` (free)."""
        from urllib.parse import quote

        return dict(self._call("GET", f"/v1/budget?user={quote(user)}")["remaining"])


def dp_state() -> type:
    """A graph state: LangGraph's `messages` (with its reducer) and `dpmem`, the last turn's
    public fields (imports langgraph)."""
    try:
        from typing import Annotated

        from langchain_core.messages import AnyMessage
        from langgraph.graph.message import add_messages
    except ImportError as error:
        raise InputError("langgraph", "langgraph installed (pip install 'dpmem-ref[langgraph]')", missing(error)) from None

    # The functional form: the annotations are objects here, not strings to resolve later.
    fields = {"messages": Annotated[list[AnyMessage], add_messages], "dpmem": dict[str, Any]}
    state: type = TypedDict("DPMemState", fields, total=False)  # type: ignore[misc]
    return state


def _last_human_text(messages: Any) -> str:
    for message in reversed(list(messages or ())):
        if getattr(message, "type", None) == "human":
            content = message.content
            if isinstance(content, list):  # LangChain content blocks: plain strings and {"text": ...} parts
                content = "".join(part if isinstance(part, str) else part.get("text", "") for part in content
                                  if isinstance(part, str | dict))
            if isinstance(content, str) and content:
                return content
    raise InputError("messages", "a last human message with text", "none")


def dp_views_node(client: DPMemClient, user: str, interaction: str = "langgraph") -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A LangGraph node: last human message -> one views-only turn -> a system message of the
    released view texts, and the turn's public fields under `dpmem` (see the module docstring)."""

    def node(state: Mapping[str, Any]) -> dict[str, Any]:
        from langchain_core.messages import SystemMessage

        turn = client.views(user, _last_human_text(state.get("messages")), interaction)
        lines = [VIEWS_HEADER, *(f"- {view['slot']}: {view['text']}" for view in turn["views"])]
        public = {key: turn[key] for key in ("route", "control", "remaining", "views")}
        return {"messages": [SystemMessage(content="\n".join(lines))], "dpmem": public}

    return node
