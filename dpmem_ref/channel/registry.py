"""Channels and encoders by name, for `--llm` and the runtime's `[router] encoder`.

Built in (no dependency beyond httpx): `echo` (the stand-in) and `openai:URL#MODEL`. Every
other generator is a `Backend` factory registered under the entry-point group `dpmem.backends`
(`smollm2` and `hf:ID` ask for the one named `hf`, with the model reference as argument), and
every sentence encoder an encoder factory under `dpmem.encoders` (`minilm`). dpmem-eval
registers its Hugging Face and vLLM backends and its encoder there (its pyproject.toml), so the
kernel reaches them without naming the package; a third party registers its own the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from dpmem_ref.channel.backend import BackendChannel
from dpmem_ref.channel.openai_compat import OpenAIBackend
from dpmem_ref.channel.protocol import Backend, LLMChannel
from dpmem_ref.channel.standin import EchoChannel
from dpmem_ref.core.errors import InputError

BACKEND_GROUP = "dpmem.backends"
ENCODER_GROUP = "dpmem.encoders"
LLM_FORMS = "echo, smollm2, hf:ID or openai:URL#MODEL"


def registered(group: str, name: str, field: str) -> Callable[..., Any]:
    """The factory registered as `name` in the entry-point group, or a one-line InputError
    naming what is installed (the eval package registers the defaults: `pip install -e eval`)."""
    found = entry_points(group=group, name=name)
    if not found:
        names = sorted(e.name for e in entry_points(group=group)) or ["none"]
        raise InputError(
            field,
            f"an entry point {name!r} in group {group} (pip install -e eval registers the defaults)",
            f"registered: {', '.join(names)}",
        )
    factory: Callable[..., Any] = next(iter(found)).load()
    return factory


def make_backend(name: str, ref: str) -> Backend:
    """The registered generator `name` over the model `ref` (an id or a local path)."""
    backend: Backend = registered(BACKEND_GROUP, name, "--llm")(ref)
    return backend


def make_channel(llm: str, seed: int | None = None) -> LLMChannel:
    """The channel for `--llm echo|smollm2|hf:ID|openai:URL#MODEL`."""
    if not isinstance(llm, str) or not llm:
        raise InputError("--llm", LLM_FORMS, type(llm).__name__)
    if llm == "echo":
        return EchoChannel()
    if llm.startswith("openai:"):
        url, _, model = llm[len("openai:") :].partition("#")
        if not url.startswith(("http://", "https://")) or not model:
            raise InputError("--llm", "openai:http(s)://HOST[:PORT]/v1#MODEL", "no URL or no model")
        return BackendChannel(OpenAIBackend(url, model), seed=seed or 0)
    if llm == "smollm2" or llm.startswith("hf:"):
        ref = "smollm2" if llm == "smollm2" else llm[len("hf:") :]
        if not ref:
            raise InputError("--llm", "hf:MODEL_ID_OR_PATH", "an empty model reference")
        return BackendChannel(make_backend("hf", ref), seed=seed or 0)
    raise InputError("--llm", LLM_FORMS, llm)


def make_encoder(ref: str) -> Any:
    """The registered sentence encoder `ref` (an object with `encode(texts) -> array`)."""
    return registered(ENCODER_GROUP, ref, "encoder")(ref)
