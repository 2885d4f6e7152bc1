"""The langchain-core adapter, against the installed langchain-core: a real
ChatPromptTemplate and Runnable chain receive the question and the released view texts
only, and every call is one charged DP-MemView turn."""

from __future__ import annotations

import json
import secrets
from fractions import Fraction
from pathlib import Path

import pytest

from tests.runtime_fixtures import as_fractions, copy_example, open_runtime

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

from dpmem_ref.runtime.langchain import dp_view_context, dp_view_retriever  # noqa: E402


def _runtime(tmp_path: Path, marker: str):  # type: ignore[no-untyped-def]
    agent, memory = copy_example(tmp_path)
    lines = [json.loads(line) for line in memory.read_text().splitlines()]
    memory.write_text("".join(json.dumps({**line, "text": line["text"] + " " + marker}) + "\n" for line in lines))
    return open_runtime(agent, memory, "memory:", user_caps=False)


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
