"""Observable controls c_t that read public inputs only (C6)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

import attrs

from dpmem_ref.parts.protocols import ControlContext, PrivateTurnData


@attrs.frozen
class FallbackControl:
    """c_t = which slots fell back, and which re-served a released view (reuse): functions of
    the ledgers, eps and the released history, hence public (C6). Per slot "released" (a fresh,
    charged selection), "fallback" (the generic view at zero cost) or "reused" (free)."""

    name: str = "fallback"
    violates: str | None = None
    reads_private: ClassVar[bool] = False
    reads_views: ClassVar[bool] = False
    reads_history: ClassVar[bool] = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        if context.reused and any(context.reused):
            return tuple(
                [
                    (slot, "reused" if again else "released" if ok else "fallback")
                    for (slot, _), ok, again in zip(context.views, context.admitted, context.reused, strict=True)
                ]
            )
        return tuple(
            [(slot, "released" if ok else "fallback") for (slot, _), ok in zip(context.views, context.admitted, strict=True)]
        )


@attrs.frozen
class NoControl:
    """No observable control signal."""

    name: str = "none"
    violates: str | None = None
    reads_private: ClassVar[bool] = False
    reads_views: ClassVar[bool] = False
    reads_history: ClassVar[bool] = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        return None
