"""The LLM channel K_LLM(y_t | q_t, v_t, tau_<t) (Eq. 2): called with public inputs only."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

import attrs

from dpmem_ref.core.transcript import Query, ReleasedViews, TurnRecord
from dpmem_ref.interface import Interface


class LLMChannel(Protocol):
    """K_LLM(y_t | q_t, v_t, tau_<t) (Eq. 2): called with public inputs only."""

    def respond(
        self,
        query: str,
        views: ReleasedViews,
        prefix: tuple[tuple[str, Hashable, str], ...],
    ) -> str: ...


@attrs.frozen
class TemplateChannel:
    """A deterministic stand-in response model: restates the conditioning it was given."""

    def respond(
        self,
        query: str,
        views: ReleasedViews,
        prefix: tuple[tuple[str, Hashable, str], ...],
    ) -> str:
        guidance = "; ".join(f"{slot}: {text}" for slot, text in views) or "no memory conditioning"
        return f"Answer to {query!r} following [{guidance}]"


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
