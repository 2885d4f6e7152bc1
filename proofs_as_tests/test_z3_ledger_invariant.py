"""z3: the ledger invariant of C5 as an inductive step.

State: ledgers L_a <= B_a for up to four attributes, any eps >= 0, any charge set
(Booleans). One slot-level operation with the prospective check:
    admitted = AND_{a charged} (L_a + eps <= B_a);  L_a' = L_a + eps if admitted and a charged, else L_a.
Claim: L_a' <= B_a for every a (negation unsat). Without the check (always admit), and
with the retrospective check L_a < B_a, the negation is satisfiable: z3's counterexample
is printed and verified to overshoot a cap. The strict check L_a + eps < B_a keeps the
invariant but refuses a charge landing exactly on B_a (satisfiable "lost admission").
The same step, run through the kernel's own plan_slot, budget rule and cap rule on every
ledger state of a grid that contains all reachable ones: test_ledger_invariant_kernel.py.
"""

from __future__ import annotations

import pytest
import z3


def step(n: int, rule: str):
    L = [z3.Real(f"L{k}") for k in range(n)]
    B = [z3.Real(f"B{k}") for k in range(n)]
    charged = [z3.Bool(f"charged{k}") for k in range(n)]
    eps = z3.Real("eps")
    pre = [z3.And(L[k] >= 0, L[k] <= B[k]) for k in range(n)] + [eps >= 0]
    if rule == "prospective":
        check = [z3.Implies(charged[k], L[k] + eps <= B[k]) for k in range(n)]
    elif rule == "strict":
        check = [z3.Implies(charged[k], L[k] + eps < B[k]) for k in range(n)]
    elif rule == "retrospective":
        check = [z3.Implies(charged[k], L[k] < B[k]) for k in range(n)]
    else:
        check = []
    admitted = z3.And(*check) if check else z3.BoolVal(True)
    after = [z3.If(z3.And(admitted, charged[k]), L[k] + eps, L[k]) for k in range(n)]
    return L, B, charged, eps, pre, admitted, after


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_inductive_step_with_prospective_check(n):
    L, B, charged, eps, pre, admitted, after = step(n, "prospective")
    solver = z3.Solver()
    solver.add(*pre)
    solver.add(z3.Or(*[after[k] > B[k] for k in range(n)]))
    assert solver.check() == z3.unsat


@pytest.mark.parametrize("rule", ["none", "retrospective"])
@pytest.mark.parametrize("n", [1, 4])
def test_negation_without_the_check_is_satisfiable(rule, n):
    L, B, charged, eps, pre, admitted, after = step(n, rule)
    solver = z3.Solver()
    solver.add(*pre)
    solver.add(z3.Or(*[after[k] > B[k] for k in range(n)]))
    assert solver.check() == z3.sat
    model = solver.model()
    print(f"counterexample ({rule}):", model)
    overshoot = [k for k in range(n) if z3.is_true(model.eval(after[k] > B[k], model_completion=True))]
    assert overshoot
    k = overshoot[0]
    assert z3.is_true(model.eval(charged[k], model_completion=True))
    assert z3.is_true(model.eval(eps > 0, model_completion=True))


def test_strict_check_refuses_the_last_admissible_charge():
    L, B, charged, eps, pre, admitted, after = step(1, "strict")
    solver = z3.Solver()
    solver.add(*pre, charged[0], eps > 0, L[0] + eps == B[0], z3.Not(admitted))
    assert solver.check() == z3.sat
    print("lost admission:", solver.model())
    L, B, charged, eps, pre, admitted, after = step(1, "prospective")
    solver = z3.Solver()
    solver.add(*pre, charged[0], eps > 0, L[0] + eps == B[0], z3.Not(admitted))
    assert solver.check() == z3.unsat
