"""Zoo: charging after sampling, with a crash in between (an execution-order bug).

A deployment draws and releases the view first and persists the ledger update second.
A crash between the two (one the application can provoke, e.g. a request that times
out the ledger write) releases a view whose charge never reaches the durable ledger; the
process restarts from the durable ledger, L_a = 0. Repeating it N > 2 B_a / eps_0 times
with the two-view scores gives the ratio e^{N eps_0/2} > e^{B_a} while the durable ledger
reads 0 throughout (the same closed form as C2 and C5).

This is not a set of kernel parts: the kernel fixes the order. `plan_slot` puts the charge
into the plan (`ledgers_after`) before anything is drawn, and `run_turn` returns the new
state together with the released record, so no part can release without charging. The
exact evaluation is therefore built on `plan_slot` directly: every turn is planned from the
durable ledgers (which the crash leaves at zero), the per-turn log ratios come from the
plans' exact release distributions (`StepTable.best`, the engine's own step), and
they add along the witness because each crashed session is a fresh run of the same plan.
A kernel extension point that would make this a part: an explicit commit step (plan ->
commit charge -> sample -> release) with a pluggable persistence order, which the durable
ledger work needs anyway.
"""

from __future__ import annotations

import time
from fractions import Fraction

import mpmath

from counterexamples.base import SLOT, Construction, Setting, online
from counterexamples.engine import EngineResult
from counterexamples.incomplete_charging import default_repetitions
from counterexamples.zoo._common import one_slot
from dpmem_ref import analysis
from dpmem_ref.analysis import ZERO
from dpmem_ref.analysis.steps import StepTable
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import PublicPrefix
from dpmem_ref.interface import Interface
from dpmem_ref.turn import plan_slot, zero_ledgers


def crash_every_turn(interface: Interface, store_a: Store, store_b: Store, repetitions: int) -> EngineResult:
    """Worst case when every turn crashes between release and charge (durable L = 0)."""
    start = time.perf_counter()
    durable = zero_ledgers(interface)
    query = interface.queries[0]
    total_ab = total_ba = ZERO
    witness_ab: list[analysis.WitnessTurn] = []
    witness_ba: list[analysis.WitnessTurn] = []
    steps = StepTable()
    for _ in range(repetitions):
        prefix = PublicPrefix(history=(), query=query)
        plan_a = plan_slot(interface, durable, prefix, SLOT, store_a, strict=True)
        plan_b = plan_slot(interface, durable, prefix, SLOT, store_b, strict=True)
        step_ab, view_ab, step_ba, view_ba = steps.best(plan_a, plan_b)
        total_ab = step_ab.add(total_ab)
        total_ba = step_ba.add(total_ba)
        control = (("s", "released"),)
        witness_ab.append(analysis.WitnessTurn(query.name, ((SLOT, view_ab),), control, control, ""))
        witness_ba.append(analysis.WitnessTurn(query.name, ((SLOT, view_ba),), control, control, ""))
    worst = analysis.WorstCase(
        a_over_b=analysis.Direction(total_ab, tuple(witness_ab)),
        b_over_a=analysis.Direction(total_ba, tuple(witness_ba)),
        horizon=repetitions,
        states_explored=repetitions,
        seconds=time.perf_counter() - start,
    )
    return EngineResult(worst, "plan_slot walk, durable ledger never charged", None)


def crashed_event_probabilities(
    interface: Interface, store_a: Store, store_b: Store, repetitions: int
) -> tuple[mpmath.mpf, mpmath.mpf]:
    """Pr[O_N | store] = Pr[v1 | durable ledgers, store]^N: each crashed session is planned
    from the same durable ledgers, with fresh randomness."""
    prefix = PublicPrefix(history=(), query=interface.queries[0])
    durable = zero_ledgers(interface)
    probability_a, probability_b = (
        mpmath.exp(repetitions * plan_slot(interface, durable, prefix, SLOT, store).distribution.log_probability("v1"))
        for store in (store_a, store_b)
    )
    return probability_a, probability_b


def build(cap: Fraction = Fraction(2), K: int = 4) -> Construction:
    epsilon = cap / K
    n = default_repetitions(cap, epsilon)
    interface, store_a, store_b = one_slot("zoo-charge-after-sampling", Setting(cap_a=cap), online(K))
    log_ratio = mpmath.mpf(n * epsilon.numerator) / (2 * epsilon.denominator)
    return Construction(
        name="zoo-charge-after-sampling",
        kind="zoo",
        violates="C5",
        title=f"release, then crash before the charge; N = {n} restarts, eps_0 = {epsilon}",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=n,
        bound=cap,
        event=f"O_N = all {n} releases are v1, durable L_a = 0: ratio e^(N eps_0/2)",
        closed_form=lambda: log_ratio,
        custom_engine=lambda: crash_every_turn(interface, store_a, store_b, n),
        event_probabilities=lambda: crashed_event_probabilities(interface, store_a, store_b, n),
        unrefusable_because="not a part: the kernel charges in plan_slot before sampling (run_turn order)",
    )
