"""What every generation backend shares: the decoding configuration, the `Backend`
protocol, and the chat-template helpers (a system message folded into the first user turn
for templates without a system role). Imports nothing of the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class DecodingConfig:
    """Shared by all compared interfaces of a response model (Appendix C.5).
    temperature 0 means greedy decoding (the channel is then deterministic)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


class Backend(Protocol):
    model_id: str

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        """Responses and their new-token counts, in input order."""


def fold_system(messages: Messages) -> Messages:
    """Fold the system message into the first user turn, for chat templates without a
    system role (Gemma-2). The content the model receives is unchanged."""
    if not messages or messages[0]["role"] != "system":
        return messages
    folded = [dict(m) for m in messages[1:]]
    folded[0]["content"] = messages[0]["content"] + "\n\n" + folded[0]["content"]
    return folded


def rejects_system_role(tokenizer: Any) -> bool:
    """True when the tokenizer's chat template refuses a system message (Gemma-2); decided
    once per model, so no rendering error is ever swallowed per prompt."""
    from jinja2.exceptions import TemplateError

    if not getattr(tokenizer, "chat_template", None):
        return False
    probe = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    try:
        tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
    except TemplateError:
        return True
    return False
