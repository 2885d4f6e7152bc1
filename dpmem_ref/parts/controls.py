"""Observable controls c_t that read public inputs only (C6)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

import attrs

from dpmem_ref.parts.protocols import ControlContext, PrivateTurnData


@attrs.frozen
class FallbackControl:
    """c_t = which slots fell back: a function of ledgers and eps, hence public (C6)."""

    name: str = "fallback"
    violates: str | None = None
    reads_private: ClassVar[bool] = False
    reads_views: ClassVar[bool] = False
    reads_history: ClassVar[bool] = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
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
