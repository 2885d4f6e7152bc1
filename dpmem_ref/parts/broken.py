"""Deliberately contract-breaking parts (Appendix B.5, Table 4 ablations).

Each declares the condition it breaks in `violates`; the static check reports it and the
strict kernel refuses an interface that uses it. Counterexamples and audits run them
through the same planner as the contract-abiding parts.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from typing import ClassVar

import attrs

from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query, TurnRecord
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.mechanism.construction import argmax_view
from dpmem_ref.mechanism.em import ReleaseDistribution
from dpmem_ref.parts.protocols import ControlContext, PrivateTurnData


@attrs.frozen
class ArgmaxSelector:
    """Deterministic highest-score selection (the CappedArgmax ablation): breaks C3."""

    name: str = "argmax"
    violates: str | None = "C3"
    exponential_mechanism: ClassVar[bool] = False

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> ReleaseDistribution:
        return argmax_view(views, scores)


@attrs.frozen
class NoCap:
    """Always admit (the NoCap ablation): breaks C5."""

    name: str = "none"
    violates: str | None = "C5"
    prospective: ClassVar[bool] = False

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool:
        return True


@attrs.frozen
class RawEvidenceControl:
    """c_t = 1{some read item carries evidence for a non-generic view}: breaks C6."""

    name: str = "raw-evidence"
    violates: str | None = "C6"
    reads_private: ClassVar[bool] = True
    reads_views: ClassVar[bool] = False
    reads_history: ClassVar[bool] = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        assert private is not None
        for items, vocabulary in zip(private.items, private.vocabularies, strict=True):
            tags: frozenset[str] = frozenset().union(*(item.tags for item in items))
            if any(v.compatible & tags for v in vocabulary.views if v.name != vocabulary.generic):
                return 1
        return 0


@attrs.frozen
class TopScoreControl:
    """c_t = the top internal score of the turn's selections: breaks C3/C6."""

    name: str = "top-score"
    violates: str | None = "C6"
    reads_private: ClassVar[bool] = True
    reads_views: ClassVar[bool] = False
    reads_history: ClassVar[bool] = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        assert private is not None
        return tuple(None if s is None else max(s) for s in private.scores)


VocabularyHook = Callable[[str, Store], Vocabulary]
RoutingHook = Callable[[Query, tuple[TurnRecord, ...], Store], tuple[str, ...]]
FallbackHook = Callable[[Sequence[Fraction]], bool]


@attrs.frozen
class PrivateHooks:
    """Deliberate contract breaches that read raw memory or scores (Appendix B.5).

    vocabulary: a store-dependent vocabulary (C1); routing: memory-dependent slot
    activation (C4); fallback: a fallback decided from internal scores (C4/C5).
    The strict kernel refuses an interface with any hook set.
    """

    vocabulary: VocabularyHook | None = None
    routing: RoutingHook | None = None
    fallback: FallbackHook | None = None

    @property
    def any(self) -> bool:
        return self.vocabulary is not None or self.routing is not None or self.fallback is not None

    def violations(self) -> list[tuple[str, str]]:
        """(code, message) for every hook set."""
        found = []
        if self.vocabulary is not None:
            found.append(("C1.store_dependent_vocabulary", "the view vocabulary depends on the store"))
        if self.routing is not None:
            found.append(("C4.memory_routing", "slot activation reads raw memory"))
        if self.fallback is not None:
            found.append(("C4.score_fallback", "the fallback decision reads internal scores"))
        return found
