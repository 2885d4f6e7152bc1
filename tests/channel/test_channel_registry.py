"""The LLM channel floor: Eq. 2 inputs only; echo; an OpenAI-compatible endpoint
(a real HTTP server on localhost speaking /v1/chat/completions) through the kernel's
generation interface and prompt builder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.channel import EchoChannel, make_channel
from dpmem_ref.core.errors import InputError
from tests.runtime_fixtures import OpenAIEndpoint, copy_example, open_runtime


class _Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[tuple[str, str], ...], tuple[Any, ...]]] = []

    def respond(self, query: str, views: tuple[tuple[str, str], ...], prefix: tuple[Any, ...]) -> str:
        self.calls.append((query, views, prefix))
        return f"answer {len(self.calls)}"


def test_channel_receives_query_view_texts_and_public_prefix_only(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    channel = _Recording()
    runtime = open_runtime(agent, memory, "memory:", llm=channel)
    first = runtime.turn("alice", "recipes", "i", "dinner tonight?")
    second = runtime.turn("alice", "recipes", "i", "doctor check-up")
    texts = {v.text for vocab in runtime.interface.vocabularies for v in vocab.views}
    (q1, v1, p1), (q2, v2, p2) = channel.calls
    assert q1 == "dinner tonight?" and p1 == () and {t for _, t in v1} <= texts
    assert q2 == "doctor check-up" and p2 == (("dinner tonight?", None, "answer 1"),)
    assert [s for s, _ in v1] == list(first.views) and second.response == "answer 2"
    assert EchoChannel().respond("q", (("food", "A"), ("finance", "B")), ()) == "A | B"


@pytest.mark.parametrize("bad", ["", "gpt", "openai:ftp://x#m", "openai:http://x", "hf:"])
def test_bad_llm_one_line(bad: str) -> None:
    with pytest.raises(InputError, match="--llm"):
        make_channel(bad)


def _served(body: dict[str, Any]) -> str:
    """The endpoint's answer: "served: " and the last line of the guidance (its last view)."""
    return f"served: {body['messages'][0]['content'].splitlines()[-1]}"


def test_openai_compatible_endpoint(tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    agent, memory = copy_example(tmp_path)
    with OpenAIEndpoint(_served) as endpoint:
        url = endpoint.llm
        runtime = open_runtime(agent, memory, "memory:", llm=url)
        turn = runtime.turn("alice", "recipes", "i", "Budget tips please")
        check, body = endpoint.bodies  # the start-up check, then the turn
        assert check["messages"][-1]["content"] == "start-up check"
        assert body["path"] == "/v1/chat/completions" and body["model"] == "tiny-model"
        assert body["messages"][-1] == {"role": "user", "content": "Budget tips please"}
        texts = [t for _, t in runtime.view_texts(turn)]
        assert turn.response == f"served: - {texts[-1]}"
        runtime.close()
    with pytest.raises(InputError, match="llm channel openai") as caught:  # the server is gone: at start-up
        open_runtime(agent, memory, "memory:", llm=url)
    assert "\n" not in str(caught.value) and "127.0.0.1" not in str(caught.value)  # never the URL
    down = open_runtime(agent, memory, "memory:", llm=url, check_channel=False)  # unchecked: fails at the turn
    with pytest.raises(InputError, match="llm channel openai"):
        down.turn("alice", "recipes", "i", "Budget tips please")


def test_runtime_imports_nothing_heavy() -> None:
    """The runtime is light: its heavy parts (torch, transformers, dpmem-eval, httpx,
    langchain-core, sentence-transformers) load only when a backend or adapter is chosen."""
    import subprocess
    import sys

    code = (
        "import sys, dpmem_ref.runtime, dpmem_ref.runtime.langchain, dpmem_ref.cli\n"
        "heavy = ('torch', 'transformers', 'dpmem_eval', 'httpx', 'langchain_core', 'sentence_transformers')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
