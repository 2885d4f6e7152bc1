"""The channel's protocols: what the turn loop calls (`LLMChannel`, Eq. 2) and what generates
text (`Backend`, a batch of chat message lists in, texts and new-token counts out)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

import attrs

from dpmem_ref.core.transcript import ReleasedViews

Messages = list[dict[str, str]]
"""Chat messages: [{"role": "system" | "user" | "assistant", "content": text}, ...]."""


class LLMChannel(Protocol):
    """K_LLM(y_t | q_t, v_t, tau_<t) (Eq. 2): called with public inputs only."""

    def respond(
        self,
        query: str,
        views: ReleasedViews,
        prefix: tuple[tuple[str, Hashable, str], ...],
    ) -> str: ...


@attrs.frozen
class DecodingConfig:
    """Shared by all compared interfaces of a response model (Appendix C.5).
    temperature 0 means greedy decoding (the channel is then deterministic)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    def as_dict(self) -> dict[str, object]:
        return attrs.asdict(self)


class Backend(Protocol):
    """A text generator: one response and its new-token count per message list, in input order."""

    model_id: str

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]: ...
