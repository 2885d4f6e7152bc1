"""z3: the paper's scorer sensitivity bound (Eq. 6 for u = 0.4 r + 0.4 c + 0.2 s).

For r fixed (public, it cancels) and c, s, c', s' in [0, 1]:
    |0.4 (c - c') + 0.2 (s - s')| <= 0.6,
proved by unsatisfiability of the negation; tight: z3 finds the extreme point
(c, s, c', s') = (1, 1, 0, 0) reaching 0.6 and nothing reaches 0.6 + 1/1000. The same
holds for every weight vector the config format allows (non-negative, summing to <= 1):
the bound is w_c + w_s, proved symbolically over all such weights, and for generated
weights it equals the kernel's `LinearTagScorer.exact_sensitivity` (z3 maximises it).
"""

from __future__ import annotations

from fractions import Fraction

import z3
from hypothesis import given, note

from dpmem_ref import LinearTagScorer, View, Vocabulary
from proofs_as_tests.strategies import linear_weights


def Q(x: Fraction):
    return z3.Q(x.numerator, x.denominator)


def z3_fraction(value) -> Fraction:
    if z3.is_int_value(value):
        return Fraction(value.as_long())
    return Fraction(value.as_fraction())


def unit(*names):
    variables = z3.Reals(" ".join(names))
    return variables, [z3.And(v >= 0, v <= 1) for v in variables]


def score(w, r, c, s):
    return w[0] * r + w[1] * c + w[2] * s


def test_paper_bound_holds():
    (r, c, s, c2, s2), box = unit("r", "c", "s", "c2", "s2")
    w = (Q(Fraction(2, 5)), Q(Fraction(2, 5)), Q(Fraction(1, 5)))
    diff = score(w, r, c, s) - score(w, r, c2, s2)
    solver = z3.Solver()
    solver.add(*box)
    solver.add(z3.Or(diff > Q(Fraction(3, 5)), diff < -Q(Fraction(3, 5))))
    assert solver.check() == z3.unsat


def test_paper_bound_is_tight():
    (r, c, s, c2, s2), box = unit("r", "c", "s", "c2", "s2")
    w = (Q(Fraction(2, 5)), Q(Fraction(2, 5)), Q(Fraction(1, 5)))
    diff = score(w, r, c, s) - score(w, r, c2, s2)
    solver = z3.Solver()
    solver.add(*box)
    solver.add(diff >= Q(Fraction(3, 5)))
    assert solver.check() == z3.sat
    model = solver.model()
    point = {str(v): model.eval(v, model_completion=True) for v in (c, s, c2, s2)}
    print("extreme point:", point)
    assert point == {"c": 1, "s": 1, "c2": 0, "s2": 0}
    # And nothing beyond it.
    solver = z3.Solver()
    solver.add(*box)
    solver.add(diff >= Q(Fraction(3, 5) + Fraction(1, 1000)))
    assert solver.check() == z3.unsat


def test_any_allowed_weights_symbolically():
    """For all w >= 0 with sum <= 1: |w_c (c - c') + w_s (s - s')| <= w_c + w_s <= 1."""
    (r, c, s, c2, s2), box = unit("r", "c", "s", "c2", "s2")
    w = z3.Reals("wr wc ws")
    allowed = [x >= 0 for x in w] + [z3.Sum(w) <= 1]
    diff = score(w, r, c, s) - score(w, r, c2, s2)
    solver = z3.Solver()
    solver.add(*box, *allowed)
    solver.add(z3.Or(diff > w[1] + w[2], -diff > w[1] + w[2], w[1] + w[2] > 1))
    assert solver.check() == z3.unsat


@given(linear_weights())
def test_generated_weights_max_equals_kernel_exact_sensitivity(weights):
    (r, c, s, c2, s2), box = unit("r", "c", "s", "c2", "s2")
    w = (Q(weights.relevance), Q(weights.compatibility), Q(weights.specificity))
    diff = score(w, r, c, s) - score(w, r, c2, s2)
    optimizer = z3.Optimize()
    optimizer.add(*box)
    handle = optimizer.maximize(diff)
    assert optimizer.check() == z3.sat
    value = z3_fraction(optimizer.model().eval(diff, model_completion=True))
    assert z3_fraction(optimizer.upper(handle)) == value
    vocabulary = Vocabulary("g", (View("gen"), View("v", compatible=frozenset({"t"}), specific=frozenset({"t"}))), "gen")
    kernel = LinearTagScorer(weights=weights).exact_sensitivity(vocabulary)
    note(f"weights={weights} z3 max={value} kernel={kernel}")
    assert Fraction(value) == kernel
