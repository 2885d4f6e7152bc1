"""Stand-in response models, dependency-free and deterministic: they restate their Eq. 2
inputs, so a transcript shows exactly what conditioned it (tests, examples, `dpmem run`)."""

from __future__ import annotations

from collections.abc import Hashable

import attrs

from dpmem_ref.core.transcript import ReleasedViews


@attrs.frozen
class TemplateChannel:
    """Restates the query and the released conditioning (`dpmem run`)."""

    def respond(
        self,
        query: str,
        views: ReleasedViews,
        prefix: tuple[tuple[str, Hashable, str], ...],
    ) -> str:
        guidance = "; ".join(f"{slot}: {text}" for slot, text in views) or "no memory conditioning"
        return f"Answer to {query!r} following [{guidance}]"


@attrs.frozen
class EchoChannel:
    """Returns the released view texts (in slot order), nothing else (`--llm echo`)."""

    def respond(
        self, query: str, views: ReleasedViews, prefix: tuple[tuple[str, Hashable, str], ...]
    ) -> str:
        return " | ".join(text for _, text in views)
