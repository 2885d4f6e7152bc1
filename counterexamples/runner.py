"""Evaluate a construction: exact worst case, event probabilities, contract check, refusal.

Nothing here types in a ratio: the worst case comes from the kernel's exact engine
(`counterexamples.engine.exact_worst_case`), the event probabilities from replaying the
engine's witness (`analysis.replay_transcript`) or from summing exact transcript
probabilities (`analysis.enumerate_transcripts`), the kept conditions from
`dpmem_ref.contract.contract_violations`, and the refusal from the strict kernel
(`dpmem_ref.contract.require_contract`, reported under its former name
"Interface.require_contract" so the output stays byte-identical, then `run_turn(strict=True)`
along the witness).
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import mpmath

from counterexamples.base import DIGITS, Construction
from counterexamples.engine import EngineResult, exact_worst_case, lenient_replay
from dpmem_ref import analysis
from dpmem_ref.analysis import Loss
from dpmem_ref.audit.record import WitnessRow, witness_rows
from dpmem_ref.contract import contract_violations, require_contract
from dpmem_ref.core.errors import CONDITIONS, ContractViolation, Violation
from dpmem_ref.core.rational import fraction_text
from dpmem_ref.mechanism.em import iv_precision
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn import InterfaceState, run_turn

REPORT_DIGITS = 45


@attrs.frozen
class Refusal:
    """Which strict kernel check refused the construction, with its condition."""

    check: str
    condition: str
    message: str

    def describe(self) -> str:
        return f"{self.check}: {self.condition}"


@attrs.frozen
class Finding:
    """The evaluated construction."""

    construction: Construction
    engine: EngineResult
    violations: tuple[Violation, ...]
    refusal: Refusal | None
    probability_a: mpmath.mpf | None
    probability_b: mpmath.mpf | None
    rows: tuple[WitnessRow, ...] = ()  # the witness as records (`dpmem_ref.audit.record`, as `dpmem audit`)

    @property
    def worst(self) -> analysis.Direction:
        return self.engine.worst_case.worst

    @property
    def loss(self) -> Loss:
        """The engine's worst-case loss (the one loss type, `dpmem_ref.analysis.Loss`)."""
        return self.worst.value

    @property
    def is_infinite(self) -> bool:
        return self.loss.is_infinite

    @property
    def log_ratio(self) -> mpmath.mpf:
        """Midpoint of the engine's interval (its width is below 1e-60), or +inf."""
        return mpmath.inf if self.is_infinite else self.loss.midpoint

    @property
    def interval(self) -> tuple[mpmath.mpf, mpmath.mpf]:
        return (self.loss.lower, self.loss.upper)

    @property
    def violated_conditions(self) -> tuple[str, ...]:
        return tuple(sorted({v.condition for v in self.violations}))

    @property
    def kept_conditions(self) -> tuple[str, ...]:
        return tuple(c for c in CONDITIONS if c not in self.violated_conditions)

    @property
    def breaks_bound(self) -> bool:
        """Certified: the interval's lower end exceeds B_a (or the loss is infinite)."""
        return self.loss.exceeds(self.construction.bound)

    def log_ratio_text(self, digits: int = REPORT_DIGITS) -> str:
        return "inf" if self.is_infinite else mpmath.nstr(self.log_ratio, digits, strip_zeros=False)


def strict_refusal(construction: Construction) -> Refusal | None:
    """Run the strict kernel: the static contract check, then `run_turn(strict=True)`
    along the engine's query sequence under both stores. The first refusal wins."""
    interface = construction.interface
    try:
        require_contract(interface)
    except ContractViolation as error:
        return Refusal("Interface.require_contract", error.condition, error.message)
    queries = construction.queries or interface.queries
    for store in (construction.store_a, construction.store_b):
        state = InterfaceState.initial(interface)
        source = SeededRandomSource(0)
        try:
            for t in range(construction.horizon):
                query = queries[t % len(queries)]
                state = run_turn(interface, state, query, store, source, strict=True).state
        except ContractViolation as error:
            return Refusal("run_turn(strict=True)", error.condition, error.message)
    return None


def _witness_probabilities(
    construction: Construction, engine: EngineResult
) -> tuple[mpmath.mpf | None, mpmath.mpf | None]:
    worst_case = engine.worst_case
    direction = worst_case.worst
    side = "a" if worst_case.direction == "a_over_b" else "b"
    witness = direction.witness
    if not witness or any(turn.note for turn in witness):
        return None, None
    with mpmath.workdps(REPORT_DIGITS + 20):
        log_a = lenient_replay(construction.interface, construction.store_a, witness, side)
        log_b = lenient_replay(construction.interface, construction.store_b, witness, side)
        return mpmath.exp(log_a), mpmath.exp(log_b)


def evaluate(construction: Construction) -> Finding:
    """Evaluate at DIGITS decimal digits (the engine's intervals are at 70)."""
    with mpmath.workdps(DIGITS):
        return _evaluate(construction)


def _evaluate(construction: Construction) -> Finding:
    if construction.custom_engine is not None:
        engine: EngineResult = construction.custom_engine()
    else:
        engine = exact_worst_case(
            construction.interface,
            construction.store_a,
            construction.store_b,
            construction.horizon,
            construction.queries,
        )
    if construction.event_probabilities is not None:
        probability_a, probability_b = construction.event_probabilities()
    else:
        probability_a, probability_b = _witness_probabilities(construction, engine)
    worst_case = engine.worst_case
    with iv_precision(worst_case.dps):
        rows = witness_rows(
            construction.interface,
            construction.store_a,
            construction.store_b,
            worst_case.worst.witness,
            numerator="a" if worst_case.direction == "a_over_b" else "b",
        )
    return Finding(
        construction=construction,
        engine=engine,
        violations=tuple(contract_violations(construction.interface)),
        refusal=strict_refusal(construction),
        probability_a=probability_a,
        probability_b=probability_b,
        rows=rows,
    )


def bound_text(bound: Fraction) -> str:
    return fraction_text(bound)
