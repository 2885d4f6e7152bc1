"""Exact evaluation of a construction with the kernel's engine (Appendix B.5).

Every ratio reported by this package comes from `dpmem_ref.analysis`: the worst case over
adaptive strategies from `worst_case_loss`, event probabilities from `replay_transcript`
or `enumerate_transcripts`. All of them read `turn.plan_slot`, the same exact description
the sampler draws from.

One gap: the kernel's engine plans with `plan_slot(strict=True)`, so it refuses to evaluate
an interface whose plans break C2 (a charge set missing an affected attribute) or C5 (a
ledger pushed past its cap). Those are exactly the C2 and C5 counterexamples. For them
`lenient_worst_case` runs the kernel's own engine class with the two plan-level checks
switched off (`plan_slot(strict=False)`), and `lenient_replay` replays a transcript the
same way. The lead has been asked for a `strict` parameter on `worst_case_loss` and
`replay_transcript`; when it exists, it is used instead (see `_kernel_accepts_strict`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

import attrs
import mpmath

from dpmem_ref import analysis
from dpmem_ref.errors import ContractViolation
from dpmem_ref.interface import Interface, PublicPrefix, Query, TurnRecord
from dpmem_ref.mechanism import DEFAULT_DPS, iv_precision
from dpmem_ref.policy import Store
from dpmem_ref.turn import Ledgers, SlotPlan, active_slots, observe_control, plan_slot, zero_ledgers

NEG_INF = mpmath.mpf("-inf")


def _kernel_accepts_strict(function: Callable[..., Any]) -> bool:
    return "strict" in inspect.signature(function).parameters


class _LenientEngine(analysis._Engine):
    """The kernel's exact engine, planning with `plan_slot(strict=False)`.

    Identical to `analysis._Engine` except that the per-plan C2 and C5 assertions do not
    raise, so a broken charge set or a missing cap is *evaluated* instead of refused.
    """

    def _plans(
        self,
        query: Query,
        slot: str,
        la: Ledgers,
        lb: Ledgers,
        history: tuple[TurnRecord, ...],
        released: tuple[tuple[str, str], ...],
    ) -> tuple[SlotPlan, SlotPlan]:
        key = (query.name, slot, la, lb, None if self.views_irrelevant else (released, history))
        plans = self.plan_cache.get(key)
        if plans is None:
            prefix = PublicPrefix(history=history, query=query, released=released)
            plans = (
                plan_slot(self.interface, la, prefix, slot, self.store_a, strict=False),
                plan_slot(self.interface, lb, prefix, slot, self.store_b, strict=False),
            )
            self.plan_cache[key] = plans
        return plans


def lenient_worst_case(
    interface: Interface, store_a: Store, store_b: Store, horizon: int, queries: Sequence[Query] | None = None
) -> analysis.WorstCase:
    """`analysis.worst_case_loss` with the plan-level C2/C5 assertions off (same DP, same memo)."""
    if _kernel_accepts_strict(analysis.worst_case_loss):
        result: analysis.WorstCase = analysis.worst_case_loss(  # type: ignore[call-arg]
            interface, store_a, store_b, horizon, queries, strict=False
        )
        return result
    import time

    start = time.perf_counter()
    engine = _LenientEngine(interface, store_a, store_b, horizon, queries if queries is not None else interface.queries)
    zero = zero_ledgers(interface)
    with iv_precision(analysis.IV_DPS):
        best = engine.turn_value(0, zero, zero, ())
    return analysis.WorstCase(
        a_over_b=analysis.Direction(best.ab, analysis._flatten(best.ab_path)),
        b_over_a=analysis.Direction(best.ba, analysis._flatten(best.ba_path)),
        horizon=horizon,
        states_explored=engine.states_explored,
        seconds=time.perf_counter() - start,
    )


@attrs.frozen
class EngineResult:
    """The worst case, which engine produced it, and the refusal that forced leniency."""

    worst_case: analysis.WorstCase
    engine: str
    strict_engine_refusal: str | None


def exact_worst_case(
    interface: Interface, store_a: Store, store_b: Store, horizon: int, queries: Sequence[Query] | None = None
) -> EngineResult:
    """The kernel's `worst_case_loss`; if its strict plans refuse (C2/C5), the lenient run."""
    try:
        result = analysis.worst_case_loss(interface, store_a, store_b, horizon, queries)
        return EngineResult(result, "analysis.worst_case_loss", None)
    except ContractViolation as refusal:
        lenient = lenient_worst_case(interface, store_a, store_b, horizon, queries)
        return EngineResult(lenient, "analysis engine, plan_slot(strict=False)", f"{refusal.condition}: {refusal.message}")


def lenient_replay(
    interface: Interface,
    store: Store,
    turns: Sequence[TurnRecord | analysis.WitnessTurn],
    control_side: str = "a",
) -> mpmath.mpf:
    """log Pr[views and controls of `turns` | store]: `analysis.replay_transcript`, whose
    plans are strict, or the same walk with `plan_slot(strict=False)` when they refuse."""
    try:
        return analysis.replay_transcript(interface, store, turns, control_side).log_probability
    except ContractViolation:
        pass
    with mpmath.workdps(max(mpmath.mp.dps, DEFAULT_DPS)):
        ledgers = zero_ledgers(interface)
        history: tuple[TurnRecord, ...] = ()
        total = mpmath.mpf(0)
        for turn in turns:
            query = interface.query(turn.query)
            if tuple(slot for slot, _ in turn.views) != active_slots(interface, query, history, store):
                return NEG_INF
            released: tuple[tuple[str, str], ...] = ()
            plans: list[SlotPlan] = []
            for slot, view in turn.views:
                prefix = PublicPrefix(history=history, query=query, released=released)
                plan = plan_slot(interface, ledgers, prefix, slot, store, strict=False)
                total += plan.distribution.log_probability(view)
                ledgers = plan.ledgers_after
                released = released + ((slot, view),)
                plans.append(plan)
            control = observe_control(interface, query, history, plans, released, ledgers)
            expected = _expected_control(turn, control_side)
            if control != expected:
                return NEG_INF
            history = history + (_record(query, released, control, plans),)
        return total


def _expected_control(turn: TurnRecord | analysis.WitnessTurn, side: str) -> Hashable:
    if isinstance(turn, TurnRecord):
        return turn.control
    return turn.control_a if side == "a" else turn.control_b


def _record(query: Query, released: tuple[tuple[str, str], ...], control: Hashable, plans: list[SlotPlan]) -> TurnRecord:
    return TurnRecord(
        query=query.name,
        views=released,
        control=control,
        response="",
        admitted=tuple(p.admitted for p in plans),
        charges=tuple(
            (p.slot, p.charge_set if p.admitted else frozenset(), p.epsilon if p.admitted else Fraction(0))
            for p in plans
        ),
    )


def event_probability(
    interface: Interface,
    store: Store,
    horizon: int,
    event: Callable[[tuple[TurnRecord, ...]], bool],
    query: Query,
) -> mpmath.mpf:
    """Pr[event | store] when the application asks `query` at every turn: the sum of exact
    transcript probabilities from `analysis.enumerate_transcripts` over the event."""
    with mpmath.workdps(max(mpmath.mp.dps, DEFAULT_DPS)):
        total = mpmath.mpf(0)
        for transcript, log_probability in analysis.enumerate_transcripts(interface, store, horizon, (query,)):
            if event(transcript):
                total += mpmath.exp(log_probability)
        return total
