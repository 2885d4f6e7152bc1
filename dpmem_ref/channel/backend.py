"""Any text generator (`Backend`) as an LLM channel: the released view texts become the
conditioning of the one prompt builder (`prompt.build_messages`), the last HISTORY_TURNS turns
of the transcript its prefix; greedy decoding unless told otherwise."""

from __future__ import annotations

from collections.abc import Hashable

from dpmem_ref.channel.prompt import TurnConditioning, build_messages, window
from dpmem_ref.channel.protocol import Backend, DecodingConfig
from dpmem_ref.core.transcript import ReleasedViews

MAX_NEW_TOKENS = 96
HISTORY_TURNS = 4


class BackendChannel:
    """A generation `Backend` as an `LLMChannel` (Eq. 2)."""

    def __init__(self, backend: Backend, seed: int = 0, max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        self.backend = backend
        self.decoding = DecodingConfig(max_new_tokens=max_new_tokens, temperature=0.0, seed=seed)

    def respond(
        self, query: str, views: ReleasedViews, prefix: tuple[tuple[str, Hashable, str], ...]
    ) -> str:
        conditioning = TurnConditioning(query=query, kind="views", lines=tuple(text for _, text in views))
        pairs = window(tuple((q, y) for q, _, y in prefix), HISTORY_TURNS)
        ((text, _),) = self.backend.generate([build_messages(conditioning, pairs)], self.decoding)
        return str(text).strip()

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()
