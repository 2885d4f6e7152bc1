"""The langchain-core adapter, against the installed langchain-core: a real
ChatPromptTemplate and Runnable chain receive the question and the released view texts
only, and every call is one charged DP-MemView turn."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.runtime import AgentRuntime
from dpmem_ref.runtime.turns import AgentTurn
from tests.runtime_fixtures import as_fractions, copy_example, open_runtime

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

from dpmem_ref.runtime.langchain import dp_view_context, dp_view_retriever  # noqa: E402


def _runtime(tmp_path: Path, marker: str, **options: Any) -> AgentRuntime:
    agent, memory = copy_example(tmp_path)
    lines = [json.loads(line) for line in memory.read_text().splitlines()]
    memory.write_text("".join(json.dumps({**line, "text": line["text"] + " " + marker}) + "\n" for line in lines))
    return open_runtime(agent, memory, "memory:", user_caps=False, **options)


def test_runnable_supplies_the_view_context_to_a_prompt(tmp_path: Path) -> None:
    marker = "MRK" + secrets.token_hex(6)
    runtime = _runtime(tmp_path, marker)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer following this guidance:\n{context}"), ("human", "{question}")]
    )
    seen: list[str] = []

    def model(value: object) -> str:  # the framework's model: sees the rendered prompt only
        text = value.to_string()  # type: ignore[attr-defined]
        seen.append(text)
        return "ok"

    chain = dp_view_context(runtime, "alice", "recipes") | prompt | RunnableLambda(model)
    before = as_fractions(runtime.remaining("alice", "recipes"))
    assert chain.invoke({"question": "What should I cook for dinner tonight?", "interaction": "c1"}) == "ok"
    after = as_fractions(runtime.remaining("alice", "recipes"))
    assert all(after[a] <= before[a] for a in before) and after != before  # one charged turn
    (rendered,) = seen
    assert "What should I cook for dinner tonight?" in rendered and marker not in rendered
    vocabulary_texts = {v.text for vocab in runtime.interface.vocabularies for v in vocab.views}
    guidance = rendered.split("guidance:\n", 1)[1].split("\nHuman:", 1)[0].splitlines()
    assert guidance and set(guidance) <= vocabulary_texts  # view texts, nothing else
    context = dp_view_context(runtime, "alice", "recipes").invoke("tell me a joke")
    assert context["route"] is None and context["control"] is None


def test_retriever_documents_are_released_views(tmp_path: Path) -> None:
    marker = "MRK" + secrets.token_hex(6)
    runtime = _runtime(tmp_path, marker)
    retriever = dp_view_retriever(runtime, "alice", "recipes")
    for _ in range(6):
        documents = retriever.invoke("Budget tips please")
        assert documents and all(isinstance(d, Document) for d in documents)
        assert all(marker not in d.page_content and d.metadata["route"] == "budget-review" for d in documents)
    left = as_fractions(runtime.remaining("alice", "recipes"))
    assert left["debt"] == 0 and left["diabetes"] == Fraction(2)  # finance reads charge debt only


GENERIC_DOCUMENTS = [  # the no-match turn's released views: every slot's generic view
    ("health", "health-generic", "Give general, widely applicable health information."),
    ("food", "balanced-meals", "Suggest balanced, everyday meals."),
    ("finance", "finance-generic", "Give general, widely applicable money tips."),
    ("schedule", "schedule-generic", "Assume an ordinary weekday schedule."),
]


class SilentChannel:
    """The runtime's own LLM channel: the adapters must never call it (the framework prompts its model)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def respond(self, query: str, views: Sequence[tuple[str, str]], prefix: Sequence[Any]) -> str:
        self.calls.append(query)
        return "the runtime's own answer"


def _served_turns(runtime: AgentRuntime, monkeypatch: pytest.MonkeyPatch) -> list[AgentTurn]:
    """Every turn the runtime serves from now on, as the adapter received it."""
    served: list[AgentTurn] = []
    serve = runtime.turn

    def turn(*args: Any, **kwargs: Any) -> AgentTurn:
        served.append(serve(*args, **kwargs))
        return served[-1]

    monkeypatch.setattr(runtime, "turn", turn)
    return served


def test_runnable_output_is_one_uncalled_turn_with_exact_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel = SilentChannel()
    runtime = _runtime(tmp_path, "MRK", llm=channel)
    served = _served_turns(runtime, monkeypatch)
    context = dp_view_context(runtime, "alice", "recipes")
    assert context.get_name() == "dp_view_context"
    assert context.invoke("tell me a joke") == {
        "question": "tell me a joke",
        "context": "\n".join(text for _, _, text in GENERIC_DOCUMENTS),
        "route": None,
        "remaining": {"debt": "2/1", "diabetes": "2/1"},  # the interface caps (no per-user cap), nothing charged
        "control": None,
    }
    matched = context.invoke({"question": "Budget tips please", "interaction": "chat-7"})
    turn = served[-1]
    assert matched == {
        "question": "Budget tips please",
        "context": "\n".join(text for _, text in runtime.view_texts(turn)),
        "route": "budget-review",
        "remaining": {"debt": "3/2", "diabetes": "2/1"},  # one charge of 1/2 to debt
        "control": turn.control,
    }
    assert list(turn.views) == ["finance"] and matched["context"] and "\n" not in matched["context"]
    context.invoke({"question": "tell me a joke"})
    dp_view_context(runtime, "alice", "recipes", interaction="docs-qa").invoke("tell me a joke")
    assert [t.interaction for t in served] == ["langchain", "chat-7", "langchain", "docs-qa"]
    assert [t.response for t in served] == [""] * 4 and channel.calls == []  # the runtime's channel: never called


@pytest.mark.parametrize(
    ("value", "found"),
    [(42, "'int'"), ({"question": 3}, "'dict'"), ({"interaction": "chat-1"}, "'dict'"), (["tell me a joke"], "'list'")],
)
def test_runnable_refuses_input_without_a_question_text(value: object, found: str, tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "MRK")
    before = runtime.remaining("alice", "recipes")
    with pytest.raises(InputError) as caught:
        dp_view_context(runtime, "alice", "recipes").invoke(value)
    assert str(caught.value) == 'input: expected a question string or {"question": ...}, found ' + found
    assert runtime.remaining("alice", "recipes") == before


def test_retriever_documents_carry_slot_view_and_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    channel = SilentChannel()
    runtime = _runtime(tmp_path, "MRK", llm=channel)
    served = _served_turns(runtime, monkeypatch)
    retriever = dp_view_retriever(runtime, "alice", "recipes")
    assert retriever.invoke("tell me a joke") == [
        Document(page_content=text, metadata={"slot": slot, "view": view, "route": None})
        for slot, view, text in GENERIC_DOCUMENTS
    ]
    (document,) = retriever.invoke("Budget tips please")
    turn = served[-1]
    assert document == Document(
        page_content=runtime.view_texts(turn)[0][1],
        metadata={"slot": "finance", "view": turn.views["finance"], "route": "budget-review"},
    )
    dp_view_retriever(runtime, "alice", "recipes", interaction="docs-qa").invoke("tell me a joke")
    assert [t.interaction for t in served] == ["langchain", "langchain", "docs-qa"]
    assert [t.response for t in served] == [""] * 3 and channel.calls == []


@pytest.mark.parametrize(("adapter", "module"), [(dp_view_context, "runnables"), (dp_view_retriever, "retrievers")])
def test_without_langchain_core_the_adapters_say_what_to_install(
    adapter: Any, module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = _runtime(tmp_path, "MRK")
    monkeypatch.setitem(sys.modules, f"langchain_core.{module}", None)  # as if not installed
    with pytest.raises(InputError) as caught:
        adapter(runtime, "alice", "recipes")
    assert str(caught.value) == (
        "langchain: expected langchain-core installed (pip install 'dpmem-ref[langchain]'), "
        f"found no module 'langchain_core.{module}'"
    )
