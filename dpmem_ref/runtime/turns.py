"""What an application observes of one runtime turn (`AgentTurn`), and what a retry needs.

Controls are turned into JSON data by the one converter every JSON output uses
(`dpmem_ref.schemas.json_value`: `dpmem run --json`, `dpmem audit --json`, `dpmem chat`,
`dpmem serve`). `ChannelUnavailable` is the error of an LLM channel that failed after the turn was charged (its released views are
recorded under the turn id: a retry regenerates from them at no new charge).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from dpmem_ref.core.errors import InputError

MAX_RECORDED_TURNS = 4096  # turns kept for retries by turn id (per runtime process; oldest dropped)


class ChannelUnavailable(InputError):
    """The LLM channel failed AFTER the turn's views were released and charged. Nothing is
    lost: the turn's released views are recorded under its turn id, and a retry with the
    same turn id regenerates from them at no new charge. `dpmem serve` answers 503 naming
    the channel (not the application's input)."""


def channel_name(llm: object) -> str:
    """The channel's kind for error messages: never a URL (it may carry credentials)."""
    if isinstance(llm, str):
        return llm.split(":", 1)[0] if ":" in llm else llm
    return type(llm).__name__


def check_channel_answers(channel: Any, name: str) -> None:
    """Call the channel once (start-up): ChannelUnavailable, the channel closed, if it fails."""
    try:
        channel.respond("start-up check", (), ())
    except Exception as error:
        close = getattr(channel, "close", None)
        if callable(close):
            close()
        raise ChannelUnavailable(f"llm channel {name}", "a channel that answers at start-up", type(error).__name__) from None


@attrs.frozen
class RecordedTurn:
    """A turn's released part, recorded with its charge: what a retry regenerates from."""

    query: str
    route: str | None
    released: tuple[tuple[str, str], ...]
    control: Any


@attrs.frozen
class AgentTurn:
    """One served turn, as the application sees it (everything here is public).

    query: the free text the application sent; route: the catalogue query it was routed
    to (None: no match, generic views only); response: the LLM channel's answer; control:
    the kernel's observable control c_t as JSON data (C6; None on a no-match turn);
    remaining: attribute -> exact "p/q" this application may still spend for this user
    (min over its scopes); interaction: the caller's label (it never selects a ledger);
    views: slot -> released view name."""

    query: str
    route: str | None
    response: str
    control: Any
    remaining: Mapping[str, str]
    interaction: str = ""
    views: Mapping[str, str] = attrs.field(factory=dict)
    turn_id: str = ""
    retried: bool = False

    def to_json(self) -> dict[str, Any]:
        """The `dpmem chat` output line (JSON-able)."""
        extra: dict[str, Any] = {"turn_id": self.turn_id, "retried": self.retried} if self.turn_id else {}
        return extra | {
            "query": self.query,
            "route": self.route,
            "response": self.response,
            "control": self.control,
            "remaining": dict(self.remaining),
            "interaction": self.interaction,
            "views": dict(self.views),
        }


__all__ = ["MAX_RECORDED_TURNS", "AgentTurn", "ChannelUnavailable", "RecordedTurn", "channel_name", "check_channel_answers"]
