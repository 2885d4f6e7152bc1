"""Proving a declared sensitivity bound Delta u (Eq. 6) for the paper's linear scorer.

Appendix C.5: u(q, v; M_R) = w_r r(q, v) + w_c c(v; M_R) + w_s s(v; M_R). Under
M ~_a M' with R touching I_a, the relevance r is public and cancels; c and s read the
set of tags present among the read items. Positions of R inside I_a may hold any
content in either store, so the tag sets P (under M) and P' (under M') range over all
subsets of the tag universe (the other read positions may carry no tags). Hence

    sup |u_M(v) - u_M'(v)| = w_c [v has compatible tags] + w_s [v has specific tags],

attained by one changed position holding all of v's tags in M and none in M'. The bound is
proved twice: by that exact argument (`LinearTagScorer.exact_sensitivity`) and by z3,
which searches for tag sets P, P' with a gap above the declared bound (unsat = proved)
and confirms the exact supremum is attained. A declared bound below the supremum breaks
Eq. (6), hence C3; the finding carries the counterexample pair of contents. Only public
names appear here (view names and the tags a view declares), never store contents.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import attrs

from dpmem_ref.scoring import LinearTagScorer
from dpmem_ref.views import View, Vocabulary


@attrs.frozen
class Counterexample:
    """Two contents of one read position inside I_a, under M and M', and the score gap
    |u_M(v) - u_M'(v)| they produce for view `view` (the other read positions empty)."""

    view: str
    tags_in_m: tuple[str, ...]
    tags_in_m_prime: tuple[str, ...]
    gap: Fraction


@attrs.frozen
class SensitivityProof:
    """The verdict on one slot's declared bound.

    exact: the supremum of Eq. (6) by the exact argument; z3: "proved" (no gap above the
    declared bound), "refuted" (a gap above it), or "unavailable" (z3 not installed);
    counterexample: present when declared < exact.
    """

    slot: str
    declared: Fraction
    exact: Fraction
    z3: str
    counterexample: Counterexample | None

    @property
    def holds(self) -> bool:
        return self.declared >= self.exact


def _view_gap(scorer: LinearTagScorer, view: View) -> Fraction:
    weights = scorer.weights
    return (weights.compatibility if view.compatible else Fraction(0)) + (
        weights.specificity if view.specific else Fraction(0)
    )


def exact_counterexample(scorer: LinearTagScorer, vocabulary: Vocabulary) -> Counterexample:
    """The view attaining the supremum, and the pair of contents attaining it: all of the
    view's tags at one changed position under M, none under M'."""
    worst = max(vocabulary.views, key=lambda v: _view_gap(scorer, v))
    tags = tuple(sorted(worst.compatible | worst.specific))
    return Counterexample(view=worst.name, tags_in_m=tags, tags_in_m_prime=(), gap=_view_gap(scorer, worst))


def _gap_expression(scorer: LinearTagScorer, view: View) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """z3 expression for u_M(v) - u_M'(v) (relevance cancels) over free tag sets P, P'."""
    import z3

    tags = sorted(view.compatible | view.specific)
    in_m = {t: z3.Bool(f"m_{t}") for t in tags}
    in_m_prime = {t: z3.Bool(f"mprime_{t}") for t in tags}

    def rational(value: Fraction) -> Any:
        return z3.Q(value.numerator, value.denominator)

    def score(present: dict[str, Any]) -> Any:
        total = z3.RealVal(0)
        if view.compatible:
            anything = z3.Or(*[present[t] for t in sorted(view.compatible)])
            total = total + rational(scorer.weights.compatibility) * z3.If(anything, 1, 0)
        if view.specific:
            count = z3.Sum([z3.If(present[t], 1, 0) for t in sorted(view.specific)])
            total = total + rational(scorer.weights.specificity) * z3.ToReal(count) / len(view.specific)
        return total

    return score(in_m) - score(in_m_prime), in_m, in_m_prime


def z3_verdict(
    scorer: LinearTagScorer, vocabulary: Vocabulary, declared: Fraction, exact: Fraction
) -> tuple[str, Counterexample | None]:
    """("proved" | "refuted" | "unavailable", a z3 counterexample when refuted).

    Per view: is there (P, P') with |u_P(v) - u_P'(v)| > declared? Then, as a cross-check
    of the exact argument, z3 must find no gap above `exact` and must attain `exact`.
    """
    try:
        import z3
    except ImportError:
        return "unavailable", None
    found: Counterexample | None = None
    attained = exact == 0
    for view in vocabulary.views:
        gap, in_m, in_m_prime = _gap_expression(scorer, view)
        bound = z3.Q(declared.numerator, declared.denominator)
        solver = z3.Solver()
        solver.add(z3.Or(gap > bound, -gap > bound))
        if solver.check() == z3.sat and found is None:
            model = solver.model()
            tags_m = tuple(t for t, var in sorted(in_m.items()) if z3.is_true(model.eval(var, model_completion=True)))
            tags_mp = tuple(
                t for t, var in sorted(in_m_prime.items()) if z3.is_true(model.eval(var, model_completion=True))
            )
            value = model.eval(gap, model_completion=True)
            found = Counterexample(
                view=view.name,
                tags_in_m=tags_m,
                tags_in_m_prime=tags_mp,
                gap=abs(Fraction(value.as_fraction())),
            )
        # Cross-check the exact argument: nothing above it, and it is attained.
        exact_bound = z3.Q(exact.numerator, exact.denominator)
        above = z3.Solver()
        above.add(z3.Or(gap > exact_bound, -gap > exact_bound))
        if above.check() != z3.unsat:
            raise AssertionError(f"slot {vocabulary.slot}, view {view.name}: z3 finds a gap above the exact bound")
        equal = z3.Solver()
        equal.add(gap == exact_bound)
        if equal.check() == z3.sat:
            attained = True
    if not attained:
        raise AssertionError(f"slot {vocabulary.slot}: z3 cannot attain the exact bound {exact}")
    return ("refuted", found) if found is not None else ("proved", None)


def prove_linear_sensitivity(scorer: LinearTagScorer, vocabulary: Vocabulary, use_z3: bool = True) -> SensitivityProof:
    """Check the declared Delta u of one slot against the exact supremum of Eq. (6)."""
    declared = scorer.sensitivity(vocabulary)
    exact = scorer.exact_sensitivity(vocabulary)
    verdict, z3_counterexample = z3_verdict(scorer, vocabulary, declared, exact) if use_z3 else ("unavailable", None)
    if verdict != "unavailable" and (verdict == "refuted") != (declared < exact):
        raise AssertionError(f"slot {vocabulary.slot}: z3 ({verdict}) and the exact argument disagree")
    counterexample = None
    if declared < exact:
        counterexample = exact_counterexample(scorer, vocabulary)
        assert z3_counterexample is None or z3_counterexample.gap > declared
    return SensitivityProof(
        slot=vocabulary.slot, declared=declared, exact=exact, z3=verdict, counterexample=counterexample
    )
