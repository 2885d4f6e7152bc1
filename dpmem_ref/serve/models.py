"""Request and response bodies of `dpmem serve` (pydantic models; the OpenAPI schema is built from them).

Every request body is strict (no coercion: a number is not a string) and closed (an unknown
field is a 422 that names it); every string is bounded, and names follow the one id rule
(dpmem_ref.core.validate.ID), as the keys file's do.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dpmem_ref.core.validate import ID
from dpmem_ref.runtime.agent import MAX_QUERY_CHARS  # the runtime's bounds, one source
from dpmem_ref.runtime.memory import MAX_TEXT_CHARS as MAX_MEMORY_TEXT_CHARS

NAME_PATTERN = ID.pattern
"""User, interaction and item ids (the one id rule, anchored for JSON Schema)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TurnRequest(_Strict):
    """One application query for one user, labelled with an interaction id."""

    user: str = Field(pattern=NAME_PATTERN, description="the user whose agent is queried")
    interaction: str = Field(pattern=NAME_PATTERN, description="labels a stretch of history; the budget scope is (user, application)")
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="free text")


class ReleasedView(BaseModel):
    """One released view v_t: its slot, its name and the text a model is conditioned on (public)."""

    slot: str
    view: str
    text: str


class TurnResponse(BaseModel):
    """What the application observes of one turn (Eq. 2's response and the public control)."""

    response: str = Field(description="the response LLM's output, conditioned on the released views only")
    control: Any = Field(description="the observable control c_t as JSON (public, C6)")
    remaining: dict[str, str] = Field(description="attribute -> exact fraction left in this application's scope")
    route: str | None = Field(default=None, description="the catalogue query the text was routed to (null: no match, generic views)")
    views: list[ReleasedView] = Field(default_factory=list, description="the released views, in slot order")


class MemoryAdd(_Strict):
    slot: str = Field(pattern=NAME_PATTERN, description="a declared memory slot")
    text: str = Field(min_length=1, max_length=MAX_MEMORY_TEXT_CHARS, description="the memory item (trusted side only)")


class MemoryUpdate(_Strict):
    text: str = Field(min_length=1, max_length=MAX_MEMORY_TEXT_CHARS)


class MemoryCreated(BaseModel):
    id: str = Field(description="the new item's id")


class Done(BaseModel):
    ok: bool


class ScopeLedgers(BaseModel):
    """One budget scope of a user: its key, its ledgers L_a and caps B_a as exact fractions."""

    scope: dict[str, Any]
    ledgers: dict[str, str]
    caps: dict[str, str]


class LedgerList(BaseModel):
    user: str
    scopes: list[ScopeLedgers]


class Health(BaseModel):
    status: str


class ErrorBody(BaseModel):
    """Every error: one line; `field` names the offending field when there is one."""

    error: str
    field: str | None = None


class ViewsTurnRequest(TurnRequest):
    """A turn that may skip the service's own answer (`respond: false`: views only)."""

    respond: bool = Field(default=True, description="false: release the views without calling the service's LLM (response \"\")")


class Budget(BaseModel):
    """The calling application's own budget scope (user, application): what it may still spend."""

    user: str
    app: str
    remaining: dict[str, str] = Field(description="attribute -> exact fraction left in this application's scope")


class MemoryItemOut(BaseModel):
    """A memory item as the owner sees it (owner routes only; never shown to an application)."""

    id: str
    slot: str
    position: int
    text: str
    tags: list[str]
    user: str | None = None


class MemoryItems(BaseModel):
    user: str
    items: list[MemoryItemOut]
