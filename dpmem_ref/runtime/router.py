"""The free-text router: query text (and released history) -> a catalogue query, or none.

A public function (C4, declared in `reads`): it sees the application's query text and the
scope's released history, never memory, scores or ledgers. Each catalogue query gets an
exact score in [0, 1]: 1 when one of its declared keywords or phrases occurs in the text,
else the quantised MiniLM cosine similarity between the text and the query's catalogue
text and examples (when an encoder is configured), else 0. The best score at or above the
threshold wins (ties: more keyword hits, then catalogue order); below it the route is
None, and the turn releases the generic view of every slot (no memory read, no charge).

Why the guarantee covers it: the exact auditor's worst case (`dpmem audit`) is a maximum
over *every* adaptive query strategy over the catalogue, so any public function of the
query text and the released history - this router included, whatever it picks - is one
of the strategies it already covers. The auditor audits the same `Interface` object the
runtime serves (`AgentRuntime.interface`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import ClassVar

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.interface import Interface
from dpmem_ref.runtime.similarity import Embedder, keyword_pattern, matches


@attrs.frozen
class Route:
    """The router's decision: a catalogue query name (None: no match) and its exact score."""

    query: str | None
    score: Fraction


@attrs.frozen
class FreeTextRouter:
    """Keyword rules and/or nearest neighbour over the catalogue, with a threshold."""

    # Declared capabilities (C4), in the kernel parts' style (dpmem_ref.parts.protocols):
    # what `route` may be given (its signature), whether it uses the history (it does not:
    # keyword rules and the encoder see the text only), and that it never reads memory.
    reads: ClassVar[tuple[str, ...]] = ("query_text", "history")
    reads_history: ClassVar[bool] = False
    reads_private: ClassVar[bool] = False

    names: tuple[str, ...]
    targets: Mapping[str, str] = attrs.field(repr=False)  # query name -> text the encoder compares with
    keywords: Mapping[str, tuple[re.Pattern[str], ...]] = attrs.field(factory=dict, repr=False)
    threshold: Fraction = Fraction(1, 2)
    embedder: Embedder | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], interface: Interface, embedder: Embedder | None) -> FreeTextRouter:
        """[router] of the agent file: keywords = {query = [...]}, examples = {query = [...]},
        threshold."""
        from dpmem_ref.core.rational import unit_interval_fraction

        names = tuple(q.name for q in interface.queries)
        keywords: dict[str, tuple[re.Pattern[str], ...]] = {}
        for field in ("keywords", "examples"):
            table = spec.get(field, {})
            if not isinstance(table, Mapping):
                raise InputError(f"router.{field}", "a table query -> [texts]", type(table).__name__)
            for name, items in table.items():
                if name not in names:
                    raise InputError(f"router.{field}.{name}", f"a catalogue query among {list(names)}", name)
                if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
                    raise InputError(f"router.{field}.{name}", "a list of non-empty strings", type(items).__name__)
        table = spec.get("keywords", {})
        assert isinstance(table, Mapping)
        for name, items in table.items():
            keywords[name] = tuple(keyword_pattern(k, f"router.keywords.{name}[{i}]") for i, k in enumerate(items))
        examples = spec.get("examples", {})
        assert isinstance(examples, Mapping)
        targets = {q.name: " ".join([q.text, *examples.get(q.name, [])]) for q in interface.queries}
        threshold = unit_interval_fraction(spec.get("threshold", "1/2"), "router.threshold")
        if threshold == 0:
            raise InputError("router.threshold", "a number in (0, 1] (0 would route every text)", "0")
        if not keywords and embedder is None:
            raise InputError("router", "keywords, an encoder, or both", "neither")
        return cls(names=names, targets=targets, keywords=keywords, threshold=threshold, embedder=embedder)

    def scores(self, text: str) -> dict[str, tuple[Fraction, int]]:
        """(exact score in [0, 1], keyword hits) of every catalogue query for `text`."""
        hits = {name: matches(self.keywords.get(name, ()), text) for name in self.names}
        out = {name: (Fraction(1) if hits[name] else Fraction(0), hits[name]) for name in self.names}
        if self.embedder is not None:
            similar = self.embedder.similarities(text, [self.targets[name] for name in self.names])
            out = {name: (max(out[name][0], s), hits[name]) for name, s in zip(self.names, similar, strict=True)}
        return out

    def route(self, text: str, history: tuple[TurnRecord, ...] = ()) -> Route:
        """The catalogue query for `text` (public inputs only, C4), or None below threshold."""
        if not isinstance(text, str):
            raise InputError("query", "text", type(text).__name__)
        scored = self.scores(text)
        best = max(self.names, key=lambda n: (scored[n][0], scored[n][1], -self.names.index(n)))
        score = scored[best][0]
        return Route(query=best if score >= self.threshold else None, score=score)
