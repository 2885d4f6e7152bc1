"""The LLM channel K_LLM(y_t | q_t, v_t, tau_<t) (Eq. 2) for the runtime.

Every backend is the kernel's `LLMChannel` (`respond(query, views, prefix)`): it receives
the application's query text, the released view texts and the earlier public transcript,
nothing else. The generating backends are dpmem-eval's (one generation interface shared
with the evaluation: `Backend.generate(batch, decoding)`, prompts from
`dpmem_eval.pipeline.prompts.build_messages`), imported only when chosen:

- `echo`            the released view texts, joined (tests; no dependency);
- `smollm2`         the shipped SmolLM2-135M-Instruct on the CPU (eval's HF backend);
- `hf:ID_OR_PATH`   any transformers causal LM (eval's HF backend);
- `openai:URL#MODEL` an OpenAI-compatible chat endpoint (vLLM, llama.cpp server) at URL
                    (e.g. http://127.0.0.1:8000/v1), via httpx, behind the same `Backend`
                    interface.
"""

from __future__ import annotations

import importlib
from collections.abc import Hashable, Sequence
from typing import Any

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import ReleasedViews
from dpmem_ref.turn.channel import LLMChannel

MAX_NEW_TOKENS = 96
HISTORY_TURNS = 4


@attrs.frozen
class EchoChannel:
    """Returns the released view texts (in slot order), nothing else: for tests."""

    def respond(
        self, query: str, views: ReleasedViews, prefix: tuple[tuple[str, Hashable, str], ...]
    ) -> str:
        return " | ".join(text for _, text in views)


class BackendChannel:
    """A dpmem-eval generation `Backend` as an LLM channel (greedy unless told otherwise)."""

    def __init__(self, backend: Any, seed: int = 0, max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        generation = importlib.import_module("dpmem_eval.pipeline.generation")
        self.backend = backend
        self.decoding = generation.DecodingConfig(max_new_tokens=max_new_tokens, temperature=0.0, seed=seed)

    def respond(
        self, query: str, views: ReleasedViews, prefix: tuple[tuple[str, Hashable, str], ...]
    ) -> str:
        prompts = importlib.import_module("dpmem_eval.pipeline.prompts")  # Eq. 2's one prompt builder
        conditioning = prompts.TurnConditioning(query=query, kind="views", lines=tuple(text for _, text in views))
        pairs = prompts.window(tuple((q, y) for q, _, y in prefix), HISTORY_TURNS)
        ((text, _),) = self.backend.generate([prompts.build_messages(conditioning, pairs)], self.decoding)
        return str(text).strip()

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()


class OpenAIBackend:
    """An OpenAI-compatible /chat/completions endpoint behind eval's `Backend` interface."""

    def __init__(self, url: str, model: str, timeout_s: float = 120.0) -> None:
        try:
            import httpx
        except ImportError:
            raise InputError("--llm", "httpx for openai: (pip install 'dpmem-ref[agent]')", "it missing") from None
        self.model_id = model
        self.url = url.rstrip("/") + "/chat/completions"
        self._httpx = httpx
        self._client = httpx.Client(timeout=timeout_s)

    def generate(self, batch: Sequence[list[dict[str, str]]], decoding: Any) -> list[tuple[str, int]]:
        out = []
        for messages in batch:
            body = {
                "model": self.model_id,
                "messages": messages,
                "max_tokens": decoding.max_new_tokens,
                "temperature": decoding.temperature,
                "top_p": decoding.top_p,
                "seed": decoding.seed,
            }
            try:
                response = self._client.post(self.url, json=body)
            except self._httpx.HTTPError as error:
                raise InputError("--llm", "a reachable OpenAI-compatible endpoint", type(error).__name__) from None
            if response.status_code != 200:
                raise InputError("--llm", "an OpenAI-compatible endpoint answering 200", response.status_code)
            try:
                data = response.json()
                text = str(data["choices"][0]["message"]["content"] or "")
                tokens = int((data.get("usage") or {}).get("completion_tokens") or len(text.split()))
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                raise InputError("--llm", "an OpenAI chat completion (choices[0].message.content)", "another answer") from None
            out.append((text, tokens))
        return out

    def close(self) -> None:
        self._client.close()


def make_channel(llm: str, seed: int | None = None) -> LLMChannel:
    """The channel for `--llm echo|smollm2|hf:ID|openai:URL#MODEL`."""
    if not isinstance(llm, str) or not llm:
        raise InputError("--llm", "echo, smollm2, hf:ID or openai:URL#MODEL", type(llm).__name__)
    if llm == "echo":
        return EchoChannel()
    if llm.startswith("openai:"):
        url, _, model = llm[len("openai:") :].partition("#")
        if not url.startswith(("http://", "https://")) or not model:
            raise InputError("--llm", "openai:http(s)://HOST[:PORT]/v1#MODEL", "no URL or no model")
        return BackendChannel(_need_eval(lambda: OpenAIBackend(url, model)), seed=seed or 0)
    if llm == "smollm2" or llm.startswith("hf:"):
        ref = "smollm2" if llm == "smollm2" else llm[len("hf:") :]
        if not ref:
            raise InputError("--llm", "hf:MODEL_ID_OR_PATH", "an empty model reference")

        def build() -> Any:
            return importlib.import_module("dpmem_eval.pipeline.generation").make_backend("hf", ref, batch_size=1)

        return BackendChannel(_need_eval(build), seed=seed or 0)
    raise InputError("--llm", "echo, smollm2, hf:ID or openai:URL#MODEL", llm)


def _need_eval(build: Any) -> Any:
    try:
        importlib.import_module("dpmem_eval.pipeline.generation")
    except ImportError:
        raise InputError("--llm", "dpmem-eval installed for this backend (pip install -e eval)", "it missing") from None
    return build()
