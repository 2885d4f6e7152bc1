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

import time
from fractions import Fraction
from math import lcm
from typing import Any

import attrs

from dpmem_ref.core.limits import Z3_BUDGET_S, Z3_MEMORY_MB
from dpmem_ref.core.views import View, Vocabulary
from dpmem_ref.parts.scoring import LinearTagScorer


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
    declared bound), "refuted" (a gap above it), "unproved" (its time budget ran out: the
    exact argument alone decides) or "unavailable" (z3 not installed);
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


def _gap_expression(
    scorer: LinearTagScorer, view: View, bounds: tuple[Fraction, ...]
) -> tuple[Any, int, dict[str, Any], dict[str, Any]]:
    """z3 integer expression for L * (u_M(v) - u_M'(v)) (relevance cancels) over free tag
    sets P, P', and the scale L that makes it and every bound in `bounds` integral.

    Integer (QF_LIA) rather than real arithmetic: the same statement, but z3 decides it in
    milliseconds where the real encoding took seconds to minutes for a few hundred tags.
    """
    import z3

    weights = scorer.weights
    specific = sorted(view.specific)
    per_tag = weights.specificity / len(specific) if specific else Fraction(0)
    scale = lcm(weights.compatibility.denominator, per_tag.denominator, *(b.denominator for b in bounds))
    tags = sorted(view.compatible | view.specific)
    in_m = {t: z3.Bool(f"m_{t}") for t in tags}
    in_m_prime = {t: z3.Bool(f"mprime_{t}") for t in tags}

    def score(present: dict[str, Any]) -> Any:
        total = z3.IntVal(0)
        if view.compatible:
            anything = z3.Or(*[present[t] for t in sorted(view.compatible)])
            total = total + int(weights.compatibility * scale) * z3.If(anything, 1, 0)
        if specific:
            total = total + int(per_tag * scale) * z3.Sum([z3.If(present[t], 1, 0) for t in specific])
        return total

    return score(in_m) - score(in_m_prime), scale, in_m, in_m_prime


def z3_deadline(budget_s: float = Z3_BUDGET_S) -> int:
    """The time.monotonic_ns() at which z3 work started now must stop: pass one deadline
    to every slot of one check so the whole check stays within Z3_BUDGET_S."""
    return time.monotonic_ns() + int(budget_s * 1e9)


class _OutOfTime(Exception):
    """The z3 budget ran out before a verdict (reported as "unproved")."""


def _solve(constraint: Any, deadline_ns: int) -> Any:
    """A fresh QF_LIA solver on `constraint`, limited to the time left before deadline_ns."""
    import z3

    left_ms = (deadline_ns - time.monotonic_ns()) // 1_000_000
    if left_ms <= 0:
        raise _OutOfTime
    solver = z3.SolverFor("QF_LIA")
    solver.set("timeout", int(min(left_ms, 2**31 - 1)))
    solver.set("max_memory", Z3_MEMORY_MB)
    solver.add(constraint)
    result = solver.check()
    if result == z3.unknown:
        raise _OutOfTime
    return solver if result == z3.sat else None


def z3_verdict(
    scorer: LinearTagScorer,
    vocabulary: Vocabulary,
    declared: Fraction,
    exact: Fraction,
    deadline_ns: int | None = None,
) -> tuple[str, Counterexample | None]:
    """("proved" | "refuted" | "unproved" | "unavailable", a z3 counterexample when refuted).

    Per view: is there (P, P') with |u_P(v) - u_P'(v)| > declared? Then, as a cross-check
    of the exact argument, z3 must find no gap above `exact` and must attain `exact`.
    z3 stops at `deadline_ns` (time.monotonic_ns; default: Z3_BUDGET_S from now, see
    `z3_deadline`); when it runs out (or z3 answers "unknown") the verdict is "unproved":
    never a hang, and never a claimed proof.
    """
    try:
        import z3
    except ImportError:
        return "unavailable", None
    deadline_ns = z3_deadline() if deadline_ns is None else deadline_ns
    found: Counterexample | None = None
    attained = exact == 0
    try:
        for view in vocabulary.views:
            gap, scale, in_m, in_m_prime = _gap_expression(scorer, view, (declared, exact))
            bound = int(declared * scale)
            # One counterexample suffices: later views are only cross-checked against `exact`.
            solver = None if found is not None else _solve(z3.Or(gap > bound, -gap > bound), deadline_ns)
            if solver is not None:
                model = solver.model()
                chosen_m = [t for t, var in sorted(in_m.items()) if z3.is_true(model.eval(var, model_completion=True))]
                chosen_mp = [
                    t for t, var in sorted(in_m_prime.items()) if z3.is_true(model.eval(var, model_completion=True))
                ]
                value = model.eval(gap, model_completion=True).as_long()
                found = Counterexample(
                    view=view.name,
                    tags_in_m=tuple(chosen_m),
                    tags_in_m_prime=tuple(chosen_mp),
                    gap=abs(Fraction(value, scale)),
                )
            # Cross-check the exact argument: nothing above it, and it is attained.
            exact_bound = int(exact * scale)
            if _solve(z3.Or(gap > exact_bound, -gap > exact_bound), deadline_ns) is not None:
                raise AssertionError(f"slot {vocabulary.slot}, view {view.name}: z3 finds a gap above the exact bound")
            if not attained and _solve(gap == exact_bound, deadline_ns) is not None:
                attained = True
    except _OutOfTime:
        return "unproved", None
    if not attained:
        raise AssertionError(f"slot {vocabulary.slot}: z3 cannot attain the exact bound {exact}")
    return ("refuted", found) if found is not None else ("proved", None)


def prove_linear_sensitivity(
    scorer: LinearTagScorer, vocabulary: Vocabulary, use_z3: bool = True, z3_deadline_ns: int | None = None
) -> SensitivityProof:
    """Check the declared Delta u of one slot against the exact supremum of Eq. (6); the
    z3 cross-check stops at z3_deadline_ns (default: its own Z3_BUDGET_S)."""
    declared = scorer.sensitivity(vocabulary)
    exact = scorer.exact_sensitivity(vocabulary)
    verdict, z3_counterexample = (
        z3_verdict(scorer, vocabulary, declared, exact, z3_deadline_ns) if use_z3 else ("unavailable", None)
    )
    if verdict in ("proved", "refuted") and (verdict == "refuted") != (declared < exact):
        raise AssertionError(f"slot {vocabulary.slot}: z3 ({verdict}) and the exact argument disagree")
    counterexample = None
    if declared < exact:
        counterexample = exact_counterexample(scorer, vocabulary)
        assert z3_counterexample is None or z3_counterexample.gap > declared
    return SensitivityProof(
        slot=vocabulary.slot, declared=declared, exact=exact, z3=verdict, counterexample=counterexample
    )
