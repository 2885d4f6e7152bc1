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

from dpmem_ref.analysis import DEFAULT_MAX_STATES, IV_DPS, WorstCase, replay_transcript, worst_case_loss
from dpmem_ref.analysis.loss import Loss
from dpmem_ref.audit.adjacency import Adjacency, decide_adjacency
from dpmem_ref.audit.check import check_interface
from dpmem_ref.config import InterfaceFile
from dpmem_ref.interface import Violation


@attrs.frozen
class CoverVerdict:
    """One cover of D (a set of attributes), its bound, and the loss measured against it."""

    attributes: tuple[str, ...]
    bound: Fraction
    holds: bool
    certified: bool


@attrs.frozen
class AuditReport:
    file: str
    store_a: str
    store_b: str
    horizon: int
    adjacency: Adjacency
    result: WorstCase
    holds: bool
    certified: bool
    covers: tuple[CoverVerdict, ...]
    witness_ledgers: tuple[tuple[tuple[str, Fraction], ...], ...]
    replayed_loss: mpmath.mpf | None  # None: the witness is impossible under the other store
    controls_private: bool
    contract: tuple[Violation, ...]
    attribute_names: tuple[str, ...]
    uncharged_epsilon: Fraction


def certify(result: WorstCase, bound: Fraction | None) -> tuple[bool, bool]:
    """(holds, certified). holds: the interval's upper end is <= the bound (a proof);
    certified: the interval decides the comparison either way (lower end > bound proves
    it broken). With no finite bound (kappa = inf) every loss is within it."""
    if bound is None:
        return True, True
    return certify_loss(result.worst.value, bound)


def certify_loss(value: Loss, bound: Fraction) -> tuple[bool, bool]:
    if value.within(bound):
        return True, True
    return False, value.exceeds(bound)


def audit(
    loaded: InterfaceFile, name_a: str, name_b: str, horizon: int, max_states: int = DEFAULT_MAX_STATES
) -> AuditReport:
    """Adjacency, exact worst case over adaptive strategies, certificate, witness replay."""
    interface = loaded.interface
    adjacency = decide_adjacency(loaded, name_a, name_b)
    store_a, store_b = loaded.store(name_a), loaded.store(name_b)
    result = worst_case_loss(interface, store_a, store_b, horizon, strict=False, max_states=max_states)
    holds, certified = certify(result, adjacency.bound)
    covers = tuple(
        CoverVerdict(attributes, cost, *certify_loss(result.worst.value, cost)) for attributes, cost in adjacency.covers
    )
    worst = result.worst
    # The witness replayed under its own numerator store: pathwise ledgers L_a(omega) and
    # an independent evaluation of its log ratio from the same plans.
    numerator, denominator = (store_a, store_b) if result.direction == "a_over_b" else (store_b, store_a)
    side = "a" if result.direction == "a_over_b" else "b"
    other = "b" if side == "a" else "a"
    replay_num = replay_transcript(interface, numerator, worst.witness, control_side=side, strict=False)
    replay_den = replay_transcript(interface, denominator, worst.witness, control_side=other, strict=False)
    replayed = None
    if replay_den.log_probability != mpmath.mpf("-inf"):
        with mpmath.workdps(IV_DPS):
            replayed = replay_num.log_probability - replay_den.log_probability
    names = interface.policy.attribute_names
    ledgers = tuple(tuple(zip(names, turn, strict=True)) for turn in replay_num.turn_ledgers)
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
    )
