"""The LangGraph integration (dpmem_ref.serve.graph) against the real `langgraph` package and a
live server: a graph of the views node and the application's own model (a fake chat model of
langchain-core, no network). The model's prompt holds the conversation and the released view
texts, never memory text; each run is one charged turn of the application's scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

from tests.serve.live import DINNER, LiveServer, marked_memory, write_keys

langgraph_graph = pytest.importorskip("langgraph.graph", reason="extra langgraph not installed")
fake_models = pytest.importorskip("langchain_core.language_models.fake_chat_models", reason="langchain-core not installed")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str], list[str]]]:
    folder = tmp_path_factory.mktemp("graph")
    keys, tokens = write_keys(folder)
    memory, markers = marked_memory(folder)
    with LiveServer(folder, keys, memory, f"sqlite:///{folder / 'ledgers.db'}") as server:
        yield server, tokens, markers


def build(client: Any, user: str, prompts: list[list[Any]]) -> Any:
    from dpmem_ref.serve.graph import dp_state, dp_views_node

    model = fake_models.FakeListChatModel(responses=["Try a lentil soup."] * 8)

    def call_model(state: dict[str, Any]) -> dict[str, Any]:
        prompts.append(list(state["messages"]))
        return {"messages": [model.invoke(state["messages"])]}

    graph = langgraph_graph.StateGraph(dp_state())
    graph.add_node("views", dp_views_node(client, user=user, interaction="graph"))
    graph.add_node("model", call_model)
    graph.add_edge(langgraph_graph.START, "views")
    graph.add_edge("views", "model")
    graph.add_edge("model", langgraph_graph.END)
    return graph.compile()


def test_the_graphs_model_sees_released_views_and_never_memory(served: Any) -> None:
    from dpmem_ref.serve.graph import VIEWS_HEADER, DPMemClient

    server, tokens, markers = served
    client = DPMemClient(server.url, tokens["recipes"])
    before = {a: Fraction(v) for a, v in client.budget("alice").items()}
    prompts: list[list[Any]] = []
    out = build(client, "alice", prompts).invoke({"messages": [("user", DINNER)]})
    assert out["messages"][-1].content == "Try a lentil soup."
    assert out["dpmem"]["route"] == "affordable-dinner"
    (prompt,) = prompts
    system = prompt[-1].content
    assert system.startswith(VIEWS_HEADER)
    assert all(view["text"] in system for view in out["dpmem"]["views"])
    everything = " ".join(str(m.content) for m in prompt) + str(out)
    assert not any(marker in everything for marker in markers)
    after = {a: Fraction(v) for a, v in client.budget("alice").items()}
    assert after == {a: Fraction(v) for a, v in out["dpmem"]["remaining"].items()}
    assert sum(after.values()) < sum(before.values())  # one charged turn of the recipes scope
    assert "recipes-" not in repr(client)  # the token is never shown


def test_the_node_refuses_what_the_service_refuses(served: Any) -> None:
    from dpmem_ref.serve.graph import DPMemClient, DPMemError

    server, tokens, _ = served
    with pytest.raises(DPMemError) as refused:
        build(DPMemClient(server.url, tokens["finance"]), "bob", []).invoke({"messages": [("user", DINNER)]})
    assert refused.value.status == 403 and refused.value.message == "this application may not query this user"
    with pytest.raises(DPMemError) as unknown:
        DPMemClient(server.url, "not-a-token").budget("alice")
    assert unknown.value.status == 401
