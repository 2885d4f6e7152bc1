"""Exact joint enumeration of augmented transcripts under two stores.

For a generated `Case` (finite interface, adaptive strategy, LLM channel, horizon) this
walks every augmented transcript omega = ((q_t, v_t, c_t, y_t))_t with positive
probability under M or M', computing at each factor:

- the strategy's probability of q_t and the channel's probability of y_t (exact
  rationals, asserted *identical* under both stores: the proof's cancellation);
- each slot-level release from the kernel's turn planner (`begin_turn`, `plan_slot`) at the same
  prefix under each store: an exact-zero log ratio when the two descriptions are the
  same distribution (equal exponents up to an additive constant: an exact rational
  identity), otherwise an mpmath interval enclosing log Pr[v | h, M] - log Pr[v | h, M'];
- the control under each store (C6: must agree, else the transcript is one-sided).

Each leaf carries its exact log probability under each store (mpmath, >= 60 digits),
the loss in both directions (the engine's `Loss`: INF when only one store can produce it) and
the pathwise ledgers L(omega) under each store. Nothing here samples.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from fractions import Fraction

import attrs
import mpmath

from dpmem_ref import InterfaceState, PublicPrefix, begin_turn
from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, IV_DPS, ZERO, Loss, step_losses
from dpmem_ref.mechanism.em import ExponentialWeights, PointMass, iv_precision
from dpmem_ref.turn import Ledgers, view_texts
from proofs_as_tests.strategies import Case, PublicTurn

DPS = 60
INF = INFINITE  # the engine's one loss type (dpmem_ref.analysis.loss)


def log_fraction(value: Fraction) -> mpmath.mpf:
    return mpmath.log(mpmath.mpf(value.numerator) / value.denominator)


def same_distribution(a: object, b: object) -> bool:
    """Exact identity of two release laws, decided on rationals (no numerics).

    Two EM laws are equal iff their views agree and their exponents differ by one
    constant (the normaliser absorbs it); a point mass equals a one-view law on it.
    """
    if isinstance(a, PointMass) and isinstance(b, PointMass):
        return a.view == b.view
    if isinstance(a, ExponentialWeights) and isinstance(b, ExponentialWeights):
        if a.views != b.views:
            return False
        shift = a.exponents[0] - b.exponents[0]
        return all(x - y == shift for x, y in zip(a.exponents, b.exponents, strict=True))
    if isinstance(a, PointMass) and isinstance(b, ExponentialWeights):
        return b.support() == (a.view,) and len(b.views) == 1
    if isinstance(b, PointMass) and isinstance(a, ExponentialWeights):
        return same_distribution(b, a)
    return False


@attrs.frozen
class Leaf:
    transcript: tuple[PublicTurn, ...]
    logp_a: mpmath.mpf | None  # None: probability zero under M
    logp_b: mpmath.mpf | None
    loss_ab: Loss  # IMPOSSIBLE when not a transcript of M
    loss_ba: Loss
    ledgers_a: Ledgers
    ledgers_b: Ledgers
    truncated: str = ""

    @property
    def ordinary(self) -> tuple[tuple[str, Hashable, str], ...]:
        return tuple((q, c, y) for q, _, c, y in self.transcript)


def _add(loss: Loss, step: Loss) -> Loss:
    return loss.add(step)


class _Walker:
    def __init__(self, case: Case, strict: bool = True, visit=None) -> None:
        self.visit = visit
        self.case = case
        self.interface = case.interface
        self.strict = strict
        self.ratio_cache: dict[tuple[object, object, str], tuple[object, object]] = {}
        self.leaves: list[Leaf] = []

    def step_losses(self, da: object, db: object, view: str) -> tuple[object, object, bool, bool]:
        """(loss_ab, loss_ba, possible under a, possible under b) for releasing `view`."""
        in_a = view in da.support()
        in_b = view in db.support()
        if in_a and in_b and same_distribution(da, db):
            return ZERO, ZERO, True, True
        key = (da, db, view)
        cached = self.ratio_cache.get(key)
        if cached is None:
            la = da.log_probability_interval(view) if in_a else None
            lb = db.log_probability_interval(view) if in_b else None
            cached = step_losses(la, lb)
            self.ratio_cache[key] = cached
        return cached[0], cached[1], in_a, in_b

    def run(self) -> list[Leaf]:
        zero = InterfaceState.initial(self.interface)
        with mpmath.workdps(DPS), iv_precision(IV_DPS):
            self.turn((), zero, zero, mpmath.mpf(0), mpmath.mpf(0), ZERO, ZERO)
        return self.leaves

    def turn(self, public, state_a, state_b, pa, pb, ab, ba) -> None:
        """Turn t: the kernel's turn planner (`begin_turn`) under each store."""
        case = self.case
        if len(public) == case.horizon:
            self.leaves.append(Leaf(public, pa, pb, ab, ba, state_a.ledgers, state_b.ledgers))
            return
        law_a = case.strategy.distribution(public)
        law_b = case.strategy.distribution(public)
        assert law_a == law_b, "the strategy reads public history only"
        for name, probability in law_a:
            lq = log_fraction(probability)
            cursor_a = begin_turn(self.interface, state_a, name, case.store_a, strict=self.strict)
            cursor_b = begin_turn(self.interface, state_b, name, case.store_b, strict=self.strict)
            if cursor_a.slots != cursor_b.slots:
                turn = (name, (), "routes differ", "")
                self.leaves.append(
                    Leaf(public + (turn,), pa, pb, INF, INF, state_a.ledgers, state_b.ledgers, truncated="routes differ")
                )
                continue
            self.slot(public, cursor_a, cursor_b, _madd(pa, lq), _madd(pb, lq), ab, ba)

    def slot(self, public, cursor_a, cursor_b, pa, pb, ab, ba) -> None:
        if cursor_a.done:
            self.end_turn(public, cursor_a, cursor_b, pa, pb, ab, ba)
            return
        plan_a = cursor_a.plan()
        plan_b = cursor_b.plan()
        if self.visit is not None:
            self.visit(plan_a, plan_b, PublicPrefix(cursor_a.history, cursor_a.query, cursor_a.released))
        views = tuple(dict.fromkeys(plan_a.distribution.support() + plan_b.distribution.support()))
        for view in views:
            sab, sba, in_a, in_b = self.step_losses(plan_a.distribution, plan_b.distribution, view)
            next_pa = _madd(pa, plan_a.distribution.log_probability(view)) if in_a and pa is not None else None
            next_pb = _madd(pb, plan_b.distribution.log_probability(view)) if in_b and pb is not None else None
            self.slot(public, cursor_a.release(view), cursor_b.release(view), next_pa, next_pb,
                      _add(ab, sab) if pa is not None else IMPOSSIBLE, _add(ba, sba) if pb is not None else IMPOSSIBLE)

    def end_turn(self, public, cursor_a, cursor_b, pa, pb, ab, ba) -> None:
        interface = self.interface
        control_a = cursor_a.control()
        control_b = cursor_b.control()
        released = cursor_a.released
        query = cursor_a.query
        if control_a != control_b:
            turn = (query.name, released, ("controls differ", control_a, control_b), "")
            self.leaves.append(Leaf(public + (turn,), pa, pb, INF if pa is not None else IMPOSSIBLE,
                                    INF if pb is not None else IMPOSSIBLE, cursor_a.ledgers, cursor_b.ledgers,
                                    truncated="controls differ"))
            return
        texts = view_texts(interface, released)
        ordinary_prefix = tuple((q, c, y) for q, _, c, y in public)
        law = self.case.channel.distribution(query.text, texts, ordinary_prefix)
        assert law == self.case.channel.distribution(query.text, texts, ordinary_prefix)
        for response, probability in law:
            ly = log_fraction(probability)
            state_a, _ = cursor_a.finish(response, control_a)
            state_b, _ = cursor_b.finish(response, control_b)
            turn = (query.name, released, control_a, response)
            self.turn(public + (turn,), state_a, state_b, _madd(pa, ly), _madd(pb, ly), ab, ba)


def _madd(value: mpmath.mpf | None, step: mpmath.mpf) -> mpmath.mpf | None:
    return None if value is None else value + step




def enumerate_joint(case: Case, strict: bool = True, visit=None) -> list[Leaf]:
    """Every augmented transcript with positive probability under M or M' (see module doc).

    `visit(plan_a, plan_b, prefix)` is called at every slot-level operation reached."""
    return _Walker(case, strict=strict, visit=visit).run()


def as_loss(value: object) -> Loss:
    """The engine's loss type, from a Loss or an mpmath interval computed here."""
    return value if isinstance(value, Loss) else Loss.interval(value)


def upper(value: object) -> mpmath.mpf:
    return as_loss(value).upper


def lower(value: object) -> mpmath.mpf:
    return as_loss(value).lower


def is_exact_zero(value: object) -> bool:
    return as_loss(value).is_zero


def upper_fraction(value: object) -> Fraction | None:
    """The exact rational upper end (None when it is +inf)."""
    loss = as_loss(value)
    return None if loss.is_infinite else loss.ends()[1]


def lower_fraction(value: object) -> Fraction | None:
    loss = as_loss(value)
    return None if loss.is_infinite else loss.ends()[0]


def certified_le(value: object, bound: Fraction) -> bool:
    """True iff the upper end is <= bound, compared exactly on rationals (impossible: True)."""
    return as_loss(value).within(bound)


def ledger_of(case: Case, ledgers: Ledgers, attribute: str) -> Fraction:
    return ledgers[case.interface.policy.attribute_names.index(attribute)]


def leaves_by_ordinary(leaves: list[Leaf]) -> Iterator[tuple[tuple, list[Leaf]]]:
    groups: dict[tuple, list[Leaf]] = {}
    for leaf in leaves:
        groups.setdefault(leaf.ordinary, []).append(leaf)
    yield from groups.items()
