"""Every construction, in report order: Proposition 1 (B.5), Table 4, the mutant zoo."""

from __future__ import annotations

from collections.abc import Callable

from counterexamples import argmax, common_support, incomplete_charging, memory_dependent, no_cap, table4
from counterexamples.base import Construction
from counterexamples.zoo import (
    charge_after_sampling,
    eps_over_delta,
    float_em,
    float_ledger,
    halved_sensitivity,
    score_fallback,
    strict_less_cap,
)

BUILDERS: dict[str, Callable[[], Construction]] = {
    "c1-common-support": common_support.build,
    "c2-incomplete-charging": incomplete_charging.build,
    "c3-argmax": argmax.build,
    "c6-evidence-control": memory_dependent.build_evidence_control,
    "c4-slot-activation": memory_dependent.build_slot_activation,
    "c4-fallback-decision": memory_dependent.build_fallback_decision,
    "c4-ledger-status": memory_dependent.build_ledger_status,
    "c6-released-score": memory_dependent.build_released_score,
    "c5-no-cap": no_cap.build,
    "table4-incompletecharge": lambda: table4.construction("IncompleteCharge"),
    "table4-cappedargmax": lambda: table4.construction("CappedArgmax"),
    "table4-nocap": lambda: table4.construction("NoCap"),
    "zoo-charge-after-sampling": charge_after_sampling.build,
    "zoo-halved-sensitivity": halved_sensitivity.build,
    "zoo-eps-over-delta": eps_over_delta.build,
    "zoo-strict-less-cap": strict_less_cap.build,
    "zoo-score-fallback": score_fallback.build,
    "zoo-float-em": float_em.build,
    "zoo-float-ledger-admits": float_ledger.build_admits,
    "zoo-float-ledger-refuses": float_ledger.build_refuses,
}


def names() -> tuple[str, ...]:
    return tuple(BUILDERS)


def build(name: str) -> Construction:
    construction = BUILDERS[name]()
    assert construction.name == name, (construction.name, name)
    return construction


def all_constructions() -> tuple[Construction, ...]:
    return tuple(build(name) for name in BUILDERS)
