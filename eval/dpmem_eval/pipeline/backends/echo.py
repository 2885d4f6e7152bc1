"""The `echo` backend: a deterministic, dependency-free stand-in that restates its input
(tests, dry runs)."""

from __future__ import annotations

from collections.abc import Sequence

from dpmem_eval.pipeline.backends.base import DecodingConfig, Messages


class EchoBackend:
    """Deterministic stand-in: restates the conditioning and the query (tests, dry runs)."""

    def __init__(self, model_id: str = "echo") -> None:
        self.model_id = model_id
        self.calls: list[Messages] = []

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        out = []
        for messages in batch:
            self.calls.append(messages)
            system = messages[0]["content"].split("\n")[1:]
            guidance = " ".join(line.lstrip("- ") for line in system if line.startswith("- "))
            text = f"For '{messages[-1]['content']}': {guidance or 'general advice'}"
            words = text.split()[: decoding.max_new_tokens]
            out.append((" ".join(words), len(words)))
        return out
