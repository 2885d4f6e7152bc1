"""The LLM channel's place in a turn (Algorithm 1, line 20): y_t from (q_t, v_t, tau_<t) and
nothing else (Eq. 2). The channel protocol and the channels themselves live on the floor below
(`dpmem_ref.channel`)."""

from __future__ import annotations

from dpmem_ref.channel.protocol import LLMChannel
from dpmem_ref.core.transcript import Query, ReleasedViews, TurnRecord
from dpmem_ref.interface import Interface


def view_texts(interface: Interface, released: ReleasedViews) -> ReleasedViews:
    """v_t as the conditioning text of each released view (its name when it has none)."""
    return tuple((slot, interface.vocabulary(slot).view(view).text or view) for slot, view in released)


def respond(
    channel: LLMChannel,
    interface: Interface,
    query: Query,
    released: ReleasedViews,
    history: tuple[TurnRecord, ...],
) -> str:
    """Algorithm 1, line 20: y_t from (q_t, v_t, tau_<t) and nothing else (Eq. 2)."""
    return channel.respond(query.text, view_texts(interface, released), tuple(r.ordinary() for r in history))
