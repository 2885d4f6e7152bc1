"""`AgentRuntime`: one interface served to many (user, application) scopes.

A turn: the router maps the free-text query to a catalogue query (public: query text and
released history only, C4); the kernel's `DurableSession.run_turn` runs Algorithm 1 over
the user's memory against the scope's durable ledgers (`scopes.ScopedLedgers`: admission
needs room in the (user, app) scope and in the optional per-user scope, one transaction
debits both, C5 per scope); the LLM channel answers from the query, the released view
texts and the earlier public transcript only (Eq. 2). A no-match query releases the
generic view of every slot, reads no memory and charges nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from dpmem_ref.errors import InputError


@attrs.frozen
class AgentTurn:
    """One served turn, as the application sees it (everything here is public).

    query: the free text the application sent; route: the catalogue query it was routed
    to (None: no match, generic views only); response: the LLM channel's answer; control:
    the kernel's observable control c_t as JSON data (C6); remaining: attribute -> exact
    "p/q" this application may still spend for this user (min over its scopes);
    interaction: the label the caller gave (it never selects a ledger); views: slot ->
    released view name."""

    query: str
    route: str | None
    response: str
    control: Any
    remaining: Mapping[str, str]
    interaction: str = ""
    views: Mapping[str, str] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The `dpmem chat` output line (JSON-able)."""
        return {
            "query": self.query,
            "route": self.route,
            "response": self.response,
            "control": self.control,
            "remaining": dict(self.remaining),
            "interaction": self.interaction,
            "views": dict(self.views),
        }


class AgentRuntime:
    """The runtime between an agent's raw memory and its response LLM (docs/agent.md)."""

    @classmethod
    def open(
        cls,
        config: str | Path,
        memory: str | Path | None = None,
        store_url: str | None = None,
        llm: str = "echo",
        seed: int | None = None,
        user_caps: Mapping[str, Fraction | int | str] | bool | None = None,
        new_epoch: str | None = None,
    ) -> AgentRuntime:
        """Bind the agent file's interface, the memory file, the ledger store and the LLM
        channel. Refuses an interface change that cannot carry the ledgers over unless
        `new_epoch` (a reason, recorded) starts a new budget epoch."""
        raise NotImplementedError

    def turn(self, user: str, app: str, interaction: str, query: str) -> AgentTurn:
        """Serve one free-text query of application `app` for `user`."""
        raise NotImplementedError

    def add_memory(self, user: str, slot: str, text: str, tags: list[str] | None = None) -> str:
        """Add a memory item to the next free position of `slot` (tagged by the tagger
        unless `tags` is given); returns its id. Over capacity -> InputError."""
        raise NotImplementedError

    def update_memory(self, user: str, item_id: str, text: str, tags: list[str] | None = None) -> None:
        raise NotImplementedError

    def delete_memory(self, user: str, item_id: str) -> None:
        raise NotImplementedError

    def ledgers(self, user: str) -> list[dict[str, Any]]:
        """Every scope of `user`: {"scope": {...}, "ledgers": {a: "p/q"}, "caps": {a: "p/q"}}."""
        raise NotImplementedError

    def remaining(self, user: str, app: str) -> dict[str, str]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def _unused() -> None:  # pragma: no cover - placeholder until the runtime lands
    raise InputError("runtime", "implemented", "a skeleton")
