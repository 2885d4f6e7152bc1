"""A langchain-core adapter (extra `langchain`): the DP view context for a prompt.

    from dpmem_ref.runtime.langchain import dp_view_context, dp_view_retriever
    chain = dp_view_context(runtime, user="alice", app="recipes") | prompt | model
    chain.invoke({"question": "What should I cook tonight?", "interaction": "chat-1"})

`dp_view_context` is a Runnable: {"question": text[, "interaction": id]} (or the text
itself) -> {"question", "context" (the released view texts, one per line), "route",
"remaining", "control"}; each call is one DP-MemView turn of the (user, app) scope (it
charges that scope's ledgers), released without calling the runtime's own LLM channel:
the framework's model receives only what the prompt holds, i.e. the question and the
released view texts (Eq. 2). `dp_view_retriever` is the same as a BaseRetriever: one
Document per released view (page_content: its text; metadata: slot, view, route).
langchain-core is imported when these are called, never by the kernel.
"""

from __future__ import annotations

import importlib
from typing import Any

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import missing
from dpmem_ref.runtime.agent import AgentRuntime


def _core(module: str) -> Any:
    try:
        return importlib.import_module(f"langchain_core.{module}")
    except ImportError as error:
        raise InputError("langchain", "langchain-core installed (pip install 'dpmem-ref[langchain]')", missing(error)) from None


def _question(value: Any) -> tuple[str, str | None]:
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and isinstance(value.get("question"), str):
        return value["question"], value.get("interaction")
    raise InputError("input", 'a question string or {"question": ...}', type(value).__name__)


def dp_view_context(runtime: AgentRuntime, user: str, app: str, interaction: str = "langchain") -> Any:
    """A Runnable releasing the DP view context of one turn for a prompt."""
    runnables = _core("runnables")

    def release(value: Any) -> dict[str, Any]:
        question, label = _question(value)
        turn = runtime.turn(user, app, label or interaction, question, respond=False)
        return {
            "question": question,
            "context": "\n".join(text for _, text in runtime.view_texts(turn)),
            "route": turn.route,
            "remaining": dict(turn.remaining),
            "control": turn.control,
        }

    return runnables.RunnableLambda(release, name="dp_view_context")


def dp_view_retriever(runtime: AgentRuntime, user: str, app: str, interaction: str = "langchain") -> Any:
    """A BaseRetriever whose documents are the released views of one turn per query."""
    retrievers = _core("retrievers")
    documents = _core("documents")

    class DPViewRetriever(retrievers.BaseRetriever):  # type: ignore[misc,name-defined]
        """DP-MemView views as documents (every call is one charged turn)."""

        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            turn = runtime.turn(user, app, interaction, query, respond=False)
            return [
                documents.Document(page_content=text, metadata={"slot": slot, "view": turn.views[slot], "route": turn.route})
                for slot, text in runtime.view_texts(turn)
            ]

    return DPViewRetriever()
