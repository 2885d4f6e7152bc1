"""Internal scorers u(q, v; M_R) in [0, 1] (Eq. 5) with policy-fixed sensitivity bounds (Eq. 6).

Scores never leave the trusted interface: no repr, message or release contains them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Protocol

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.policy import MemoryItem
from dpmem_ref.core.rational import nonnegative_fraction, positive_fraction
from dpmem_ref.core.views import Vocabulary


class Scorer(Protocol):
    """Scores the views of one slot from the public relevance and the read-set items only."""

    def scores(
        self, relevance: Mapping[str, Fraction], vocabulary: Vocabulary, items: tuple[MemoryItem, ...]
    ) -> tuple[Fraction, ...]:
        """u(q, v; M_R) for every v in the vocabulary, in vocabulary order."""

    def sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        """The declared, policy-fixed bound Delta u (Eq. 6) for selections over this slot."""

    def exact_sensitivity(self, vocabulary: Vocabulary) -> Fraction | None:
        """The exact sup of Eq. (6) where the scorer's form gives it (the static check then
        refuses a smaller declared bound), or None where only the declaration is known."""


@attrs.frozen
class LinearWeights:
    """Weights of u = w_r r + w_c c + w_s s (Appendix C.5); the paper uses 2/5, 2/5, 1/5."""

    relevance: Fraction = Fraction(2, 5)
    compatibility: Fraction = Fraction(2, 5)
    specificity: Fraction = Fraction(1, 5)

    def __attrs_post_init__(self) -> None:
        for field, value in (("r", self.relevance), ("c", self.compatibility), ("s", self.specificity)):
            nonnegative_fraction(value, f"scorer.weights.{field}")
        total = self.relevance + self.compatibility + self.specificity
        if total > 1:
            # Scores must stay in [0, 1] (Eq. 5, C3).
            raise InputError("scorer.weights", "non-negative weights summing to at most 1", str(total))


PAPER_WEIGHTS = LinearWeights()
PAPER_SENSITIVITY = Fraction(3, 5)


@attrs.frozen
class LinearTagScorer:
    """The paper's scorer u = 0.4 r + 0.4 c + 0.2 s over tagged memory items (Appendix C.5).

    r(q, v): public relevance of view v to the query (default 0);
    c(v; M_R) = 1 if any read item carries one of v's compatible tags, else 0;
    s(v; M_R) = fraction of v's specific tags present among the read items (0 if none).
    """

    weights: LinearWeights = PAPER_WEIGHTS
    declared_sensitivity: Fraction = PAPER_SENSITIVITY
    # u depends on the read items only through the set of tags present: memoize on it
    # (a pure function of its sufficient statistic; the memo stays inside the interface).
    _memo: dict[tuple[Vocabulary, tuple[tuple[str, Fraction], ...], frozenset[str]], tuple[Fraction, ...]] = (
        attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)
    )

    def __attrs_post_init__(self) -> None:
        positive_fraction(self.declared_sensitivity, "scorer.sensitivity")

    def scores(
        self, relevance: Mapping[str, Fraction], vocabulary: Vocabulary, items: tuple[MemoryItem, ...]
    ) -> tuple[Fraction, ...]:
        present: frozenset[str] = frozenset().union(*(item.tags for item in items))
        key = (vocabulary, tuple(sorted(relevance.items())), present)
        found = self._memo.get(key)
        if found is None:
            found = self._compute(relevance, vocabulary, present)
            if len(self._memo) < 100_000:
                self._memo[key] = found
        return found

    def _compute(
        self, relevance: Mapping[str, Fraction], vocabulary: Vocabulary, present: frozenset[str]
    ) -> tuple[Fraction, ...]:
        result = []
        for view in vocabulary.views:
            r = relevance.get(view.name, Fraction(0))
            c = Fraction(1) if view.compatible & present else Fraction(0)
            s = Fraction(len(view.specific & present), len(view.specific)) if view.specific else Fraction(0)
            w = self.weights
            result.append(w.relevance * r + w.compatibility * c + w.specificity * s)
        return tuple(result)

    def sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        return self.declared_sensitivity

    def exact_sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        """sup over M ~_a M' of ||u(M) - u(M')||_inf for a read touching I_a.

        r is public (cancels); c moves in {0, 1} when the view has compatible tags, s in
        [0, 1] when it has specific tags, and one changed position can carry any tags;
        the sup is attained by a position holding all of v's tags versus none.
        """
        w = self.weights
        return max(
            (w.compatibility if v.compatible else Fraction(0)) + (w.specificity if v.specific else Fraction(0))
            for v in vocabulary.views
        )


ScoreFunction = Callable[[Mapping[str, Fraction], Vocabulary, tuple[MemoryItem, ...]], tuple[Fraction, ...]]


@attrs.frozen
class FunctionScorer:
    """Any score function of (relevance, vocabulary, read items) with a declared bound.

    Used for score tables in tests and counterexamples; the kernel validates each score
    vector at run time (C3: values in [0, 1]).
    """

    function: ScoreFunction = attrs.field(repr=False)
    declared_sensitivity: Fraction
    name: str = "function"

    def scores(
        self, relevance: Mapping[str, Fraction], vocabulary: Vocabulary, items: tuple[MemoryItem, ...]
    ) -> tuple[Fraction, ...]:
        return tuple(self.function(relevance, vocabulary, items))

    def sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        return self.declared_sensitivity

    def exact_sensitivity(self, vocabulary: Vocabulary) -> Fraction | None:
        """Unknown for an arbitrary function: the declared bound is trusted."""
        return None
