"""`dpmem audit`: the verdict for two named stores.

Decide the bound (kappa of Eq. 8 and the cover attaining it, `adjacency`), compute
exactly the worst-case privacy loss of the augmented transcript over every adaptive query
strategy of length T, both directions, with the witness transcript and its pathwise
ledgers L_a(omega) (proof of Theorem 1), and certify `holds` on exact rationals. The
deployment is audited as declared (strict=False), so a broken file shows how far its
guarantee breaks.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import mpmath
from mpmath import libmp

from dpmem_ref.analysis import DEFAULT_MAX_STATES, IV_DPS, MAX_DPS, WorstCase, replay_transcript, worst_case_loss
from dpmem_ref.analysis.loss import Loss
from dpmem_ref.audit.adjacency import Adjacency, decide_adjacency
from dpmem_ref.audit.check import check_interface
from dpmem_ref.audit.digits import certain, decimal_exponent
from dpmem_ref.audit.numbers import LOSS_DIGITS
from dpmem_ref.audit.record import WitnessRow, witness_rows
from dpmem_ref.config.load import InterfaceFile
from dpmem_ref.core.errors import Violation
from dpmem_ref.core.exits import EXIT_NO_GUARANTEE, EXIT_OK, EXIT_VIOLATION
from dpmem_ref.mechanism.em import iv_precision


@attrs.frozen
class CoverVerdict:
    """One cover of D (a set of attributes), its bound, and the loss measured against it."""

    attributes: tuple[str, ...]
    bound: Fraction
    holds: bool
    certified: bool


VERDICTS = ("holds", "contract violated", "not certified", "broken", "no guarantee")


@attrs.frozen
class AuditReport:
    file: str
    store_a: str
    store_b: str
    horizon: int
    adjacency: Adjacency
    result: WorstCase
    holds: bool | None  # None: no finite bound (kappa = inf), so nothing to hold
    certified: bool | None
    covers: tuple[CoverVerdict, ...]
    witness_ledgers: tuple[tuple[tuple[str, Fraction], ...], ...]
    replayed_loss: Fraction | None  # None: the witness is impossible under the other store
    controls_private: bool
    contract: tuple[Violation, ...]
    attribute_names: tuple[str, ...]
    uncharged_epsilon: Fraction
    dps: int = IV_DPS  # digits of the enclosures the final search ran at
    rows: tuple[WitnessRow, ...] = ()  # the witness as records (`record.witness_rows`)

    @property
    def contract_ok(self) -> bool:
        return not self.contract

    @property
    def verdict(self) -> str:
        """One of VERDICTS (docs/config-format.md, "Verdicts and exit codes")."""
        if self.holds is None:
            return "no guarantee"
        if not self.holds:
            return "broken" if self.certified else "not certified"
        return "holds" if self.contract_ok else "contract violated"

    @property
    def exit_code(self) -> int:
        """0 holds; 1 broken, not certified or a contract violation; 3 no guarantee (kappa = inf)."""
        verdict = self.verdict
        return EXIT_OK if verdict == "holds" else EXIT_NO_GUARANTEE if verdict == "no guarantee" else EXIT_VIOLATION

    @property
    def guarantee(self) -> str:
        """What the verdict lets a reader conclude beyond the audited horizon, in words."""
        verdict = self.verdict
        if verdict == "no guarantee":
            return "no DP guarantee applies: the stores differ outside every protected group (kappa = inf)"
        if not self.contract_ok:
            return f"the bound is not guaranteed beyond the audited horizon T = {self.horizon} (contract violated)"
        if verdict == "holds":
            return "Theorem 1 / Corollary 1: the bound holds at every horizon (contract C1-C6 holds)"
        return f"the bound fails at T = {self.horizon}"


def certify(result: WorstCase, bound: Fraction | None) -> tuple[bool | None, bool | None]:
    """(holds, certified). holds: the interval's upper end is <= the bound (a proof);
    certified: the interval decides the comparison either way (lower end > bound proves
    it broken). With no finite bound (kappa = inf) there is no verdict: (None, None)."""
    if bound is None:
        return None, None
    return certify_loss(result.worst.value, bound)


def certify_loss(value: Loss, bound: Fraction) -> tuple[bool, bool]:
    if value.within(bound):
        return True, True
    return False, value.exceeds(bound)


def proved_digits(value: Loss) -> int:
    """Significant digits the enclosure proves (LOSS_DIGITS for exact or infinite values)."""
    if not value.is_finite or value.is_zero:
        return LOSS_DIGITS
    lo, hi = value.ends()
    if lo == hi:
        return LOSS_DIGITS
    return certain(lo, hi, LOSS_DIGITS).digits


def _next_dps(dps: int, value: Loss) -> int:
    """More digits for the enclosures: what is missing, plus the decades below 1 the loss
    sits at (each log probability is O(1), so its absolute error is about 10^-dps)."""
    lo, hi = value.ends()
    top = max(abs(lo), abs(hi))
    missing = LOSS_DIGITS - proved_digits(value) + 10
    return min(MAX_DPS, dps + missing + max(0, -decimal_exponent(top)))


def exact_worst_case(
    loaded: InterfaceFile, name_a: str, name_b: str, horizon: int, max_states: int = DEFAULT_MAX_STATES
) -> WorstCase:
    """The worst case with every reported digit proved: rerun at more digits while a
    direction's enclosure proves fewer than LOSS_DIGITS (losses near 1e-60 ... 1e-300)."""
    interface = loaded.interface
    store_a, store_b = loaded.store(name_a), loaded.store(name_b)
    dps, spent = IV_DPS, 0.0
    while True:
        result = worst_case_loss(interface, store_a, store_b, horizon, strict=False, max_states=max_states, dps=dps)
        spent += result.seconds
        short = [d.value for d in (result.a_over_b, result.b_over_a) if proved_digits(d.value) < LOSS_DIGITS]
        if not short or dps >= MAX_DPS:
            return attrs.evolve(result, seconds=spent, dps=dps)
        dps = max(_next_dps(dps, value) for value in short)


def audit(
    loaded: InterfaceFile, name_a: str, name_b: str, horizon: int, max_states: int = DEFAULT_MAX_STATES
) -> AuditReport:
    """Adjacency, exact worst case over adaptive strategies, certificate, witness replay."""
    interface = loaded.interface
    adjacency = decide_adjacency(loaded, name_a, name_b)
    store_a, store_b = loaded.store(name_a), loaded.store(name_b)
    result = exact_worst_case(loaded, name_a, name_b, horizon, max_states=max_states)
    holds, certified = certify(result, adjacency.bound)
    covers = tuple(
        CoverVerdict(attributes, cost, *certify_loss(result.worst.value, cost)) for attributes, cost in adjacency.covers
    )
    worst = result.worst
    # The witness replayed under its own numerator store: pathwise ledgers L_a(omega) and
    # an independent evaluation of its log ratio from the same plans, at 20 more digits
    # than the search's enclosures (so it can be compared digit for digit).
    direction = result.direction
    numerator, denominator = direction.numerator(store_a, store_b), direction.denominator(store_a, store_b)
    with mpmath.workdps(result.dps + 20):
        replay_num = replay_transcript(interface, numerator, worst.witness, control_side=direction, strict=False)
        replay_den = replay_transcript(
            interface, denominator, worst.witness, control_side=direction.other, strict=False
        )
        replayed = None
        if replay_den.log_probability != mpmath.mpf("-inf") and replay_num.log_probability != mpmath.mpf("-inf"):
            p, q = libmp.to_rational((replay_num.log_probability - replay_den.log_probability)._mpf_)
            replayed = Fraction(int(p), int(q))
    names = interface.policy.attribute_names
    ledgers = tuple(tuple(zip(names, turn, strict=True)) for turn in replay_num.turn_ledgers)
    with iv_precision(result.dps):
        rows = witness_rows(interface, store_a, store_b, worst.witness, numerator=direction)
    return AuditReport(
        file=loaded.path or interface.name,
        store_a=name_a,
        store_b=name_b,
        horizon=horizon,
        adjacency=adjacency,
        result=result,
        holds=holds,
        certified=certified,
        covers=covers,
        witness_ledgers=ledgers,
        replayed_loss=replayed,
        controls_private=interface.control.reads_private,
        contract=check_interface(interface, use_z3=False).violations,
        attribute_names=names,
        uncharged_epsilon=interface.uncharged_epsilon,
        dps=result.dps,
        rows=rows,
    )
