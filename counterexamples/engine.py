"""Exact evaluation of a construction with the kernel's engine (Appendix B.5).

Every ratio reported by this package comes from `dpmem_ref.analysis`: the worst case over
adaptive strategies from `worst_case_loss`, event probabilities from `replay_transcript`
or `enumerate_transcripts`. All of them read `turn.plan_slot`, the same exact description
the sampler draws from.

The engine is first run strict (as `run_turn(strict=True)`): a construction whose plans
break C2 (a charge set missing an affected attribute) or C5 (a ledger pushed past its cap)
is refused there, and that refusal is recorded. It is then audited as deployed with
`strict=False`, which evaluates the broken part instead of refusing it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import mpmath

from dpmem_ref import analysis
from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query, TurnRecord
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.em import DEFAULT_DPS


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
        lenient = analysis.worst_case_loss(interface, store_a, store_b, horizon, queries, strict=False)
        return EngineResult(
            lenient, "analysis.worst_case_loss(strict=False)", f"{refusal.condition}: {refusal.message}"
        )


def lenient_replay(
    interface: Interface,
    store: Store,
    turns: Sequence[TurnRecord | analysis.WitnessTurn],
    control_side: str = "a",
) -> mpmath.mpf:
    """log Pr[views and controls of `turns` | store] from `analysis.replay_transcript`,
    audited as deployed (strict=False) so broken charge sets and caps are evaluated."""
    return analysis.replay_transcript(interface, store, turns, control_side, strict=False).log_probability


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
        # A broken variant by design: its exact law is computed, not refused (strict=False).
        for transcript, log_probability in analysis.enumerate_transcripts(interface, store, horizon, (query,), strict=False):
            if event(transcript):
                total += mpmath.exp(log_probability)
        return total
