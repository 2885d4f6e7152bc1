"""What every generation backend shares: the decoding configuration and the `Backend`
protocol (the kernel's channel floor, `dpmem_ref.channel.protocol`, which the agent runtime
calls too), and the chat-template helpers (a system message folded into the first user turn
for templates without a system role). Imports nothing of the pipeline."""

from __future__ import annotations

from typing import Any

from dpmem_ref.channel.protocol import Backend, DecodingConfig, Messages

__all__ = ["Backend", "DecodingConfig", "Messages", "fold_system", "rejects_system_role"]


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
