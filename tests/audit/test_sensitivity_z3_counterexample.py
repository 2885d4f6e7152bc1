"""The z3 side of the Eq. (6) proof (dpmem_ref.audit.sensitivity.z3_verdict): which view its
counterexample names, exact scores whatever the weights' denominators, and the cross-check
that refuses an "exact" bound no pair of contents attains."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref.audit.sensitivity import z3_verdict
from dpmem_ref.core.views import View, Vocabulary
from dpmem_ref.parts.scoring import LinearTagScorer, LinearWeights

# w_c = 1/4: in the compatible-only view (no specific tags) only w_c itself needs the
# denominator 4; the bounds 1/5 and 1/2 below do not supply it.
WEIGHTS = LinearWeights(relevance=Fraction(1, 4), compatibility=Fraction(1, 4), specificity=Fraction(1, 2))
VOCABULARY = Vocabulary(
    slot="s",
    views=(
        View("generic"),
        View("compatible-only", compatible=frozenset({"a"})),
        View("specific-only", specific=frozenset({"b", "c"})),
    ),
    generic="generic",
)


def test_the_first_view_above_the_declared_bound_gives_the_counterexample() -> None:
    """Views are tried in vocabulary order and one counterexample suffices: the compatible-only
    view moves its score by w_c = 1/4 > 1/5, so it is the counterexample (exactly 1/4, its
    compatible tag on one side only), though the specific-only view moves its score further."""
    declared = Fraction(1, 5)
    scorer = LinearTagScorer(weights=WEIGHTS, declared_sensitivity=declared)
    exact = scorer.exact_sensitivity(VOCABULARY)
    assert exact == Fraction(1, 2)
    verdict, found = z3_verdict(scorer, VOCABULARY, declared, exact)
    assert verdict == "refuted" and found is not None
    assert (found.view, found.gap) == ("compatible-only", Fraction(1, 4))
    assert {found.tags_in_m, found.tags_in_m_prime} == {("a",), ()}


def test_a_bound_between_the_views_gaps_is_refuted_by_the_larger_view() -> None:
    declared = Fraction(1, 3)
    scorer = LinearTagScorer(weights=WEIGHTS, declared_sensitivity=declared)
    verdict, found = z3_verdict(scorer, VOCABULARY, declared, Fraction(1, 2))
    assert verdict == "refuted"
    assert found is not None and (found.view, found.gap) == ("specific-only", Fraction(1, 2))
    assert {found.tags_in_m, found.tags_in_m_prime} == {("b", "c"), ()}  # the only gap above 1/3
    assert z3_verdict(scorer, VOCABULARY, Fraction(1, 2), Fraction(1, 2)) == ("proved", None)


@pytest.mark.parametrize("claimed", [Fraction(3, 4), Fraction(5, 8)])
def test_z3_refuses_an_exact_bound_no_contents_attain(claimed: Fraction) -> None:
    """The cross-check of the exact argument: nothing above `exact`, and `exact` attained by
    some pair of contents; a claimed supremum above every gap is an internal error."""
    scorer = LinearTagScorer(weights=WEIGHTS, declared_sensitivity=Fraction(1, 5))
    with pytest.raises(AssertionError) as error:
        z3_verdict(scorer, VOCABULARY, Fraction(1, 5), claimed)
    assert str(error.value) == f"slot s: z3 cannot attain the exact bound {claimed}"


def test_z3_refuses_an_exact_bound_below_a_gap() -> None:
    scorer = LinearTagScorer(weights=WEIGHTS, declared_sensitivity=Fraction(1, 5))
    with pytest.raises(AssertionError) as error:
        z3_verdict(scorer, VOCABULARY, Fraction(1, 5), Fraction(3, 8))
    assert str(error.value) == "slot s, view specific-only: z3 finds a gap above the exact bound"
