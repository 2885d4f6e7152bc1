"""What the response LLM receives (Eq. 2): q_t, the released conditioning and tau_<t.

The only way a prompt is built is `build_messages(conditioning, prefix)`, whose arguments are
the public query, the conditioning text the interface released for this turn (DP-MemView: view
texts; the evaluation's baselines: their memory text, Table 8), and the ordinary transcript
prefix of (query, response) pairs. No store, score, ledger, method name or store label can reach
the model: the signature is the argument, and tests check the rendered prompt against it. The
runtime's generating channels and the evaluation both build their prompts here.
"""

from __future__ import annotations

import attrs

SYSTEM_INSTRUCTION = "You are the user's personal assistant. Answer helpfully and concretely in a few sentences."

GUIDANCE_HEADERS = {
    # DP-MemView and GenericOnly: public views (how to answer, never a user fact).
    "views": "Response guidance:",
    # RawReadSet, TypedMask, TaskMin, OutputFilter: memory text (Table 8).
    "memory": "Notes from the user's memory:",
}


def _check_kind(instance: object, attribute: object, kind: str) -> None:
    if kind not in GUIDANCE_HEADERS:
        raise ValueError(f"conditioning kind: expected one of {sorted(GUIDANCE_HEADERS)}, found {kind!r}")


@attrs.frozen
class TurnConditioning:
    """The public inputs of one turn besides the transcript prefix.

    kind: "views" (released view texts) or "memory" (memory text of a baseline);
    lines: the texts, in slot / position order.
    """

    query: str
    kind: str = attrs.field(validator=_check_kind)
    lines: tuple[str, ...]


Prefix = tuple[tuple[str, str], ...]
"""The ordinary transcript prefix tau_<t as (query, response) pairs (the control c_t carries
no information the model needs and is left out; leaving public inputs out is allowed)."""


def window(prefix: Prefix, history_turns: int | None) -> Prefix:
    """The last `history_turns` turns of the prefix (None: all of it, as in Eq. 2)."""
    if history_turns is None:
        return prefix
    if history_turns <= 0:
        return ()
    return prefix[-history_turns:]


def build_messages(conditioning: TurnConditioning, prefix: Prefix) -> list[dict[str, str]]:
    """Chat messages for K_LLM(y_t | q_t, v_t, tau_<t) (Eq. 2)."""
    system = SYSTEM_INSTRUCTION
    if conditioning.lines:
        guidance = "\n".join(f"- {line}" for line in conditioning.lines)
        system = f"{system}\n{GUIDANCE_HEADERS[conditioning.kind]}\n{guidance}"
    messages = [{"role": "system", "content": system}]
    for query, response in prefix:
        messages.append({"role": "user", "content": query})
        messages.append({"role": "assistant", "content": response})
    messages.append({"role": "user", "content": conditioning.query})
    return messages


def render_plain(messages: list[dict[str, str]]) -> str:
    """A template-free rendering (for backends or tokenizers without a chat template)."""
    return "\n".join(f"<{m['role']}>\n{m['content']}" for m in messages) + "\n<assistant>\n"
