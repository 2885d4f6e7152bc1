"""The exact engine: transcript likelihoods and the worst case over adaptive strategies.

For a finite interface (finite query catalogue, vocabularies, controls) and two stores,
every augmented transcript has an exact probability under each store. Queries and
responses cancel in the likelihood ratio (proof of Theorem 1: the strategy and the LLM
channel see only public inputs), so the privacy loss of a transcript is the sum, over
slot-level releases, of log Pr[v | h, M] - log Pr[v | h, M'], plus an infinite term
wherever a store-dependent part (route, control) makes the two sides disagree.

The worst case over *all* adaptive query strategies is the maximum of that sum over
every query the application could pick at every prefix and every release, computed by
dynamic programming over a state that determines the future: the turn index, both
ledger vectors and the part of the history the router reads (`Router.state_key`).
Values are mpmath intervals, so `loss <= bound` is a certificate, not a float compare.
Every probability comes from `plan_slot`, the same description the sampler draws from.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import attrs
import mpmath

from dpmem_ref.interface import FixedRouter, Interface, PublicPrefix, Query, TurnRecord
from dpmem_ref.mechanism import DEFAULT_DPS, ReleaseDistribution, iv_precision
from dpmem_ref.policy import Store
from dpmem_ref.turn import Ledgers, SlotPlan, active_slots, observe_control, plan_slot, zero_ledgers

IV_DPS = 70
MAX_HORIZON = 256


class _Infinity:
    """+infinity: a transcript with positive probability under one store only."""

    def __repr__(self) -> str:
        return "inf"


INF = _Infinity()
# A loss value: None (no transcript has positive probability on this side), INF, or an
# mpmath interval enclosing a finite log ratio.
Value = Any


def _add(step: Value, rest: Value) -> Value:
    if step is None or rest is None:
        return None
    if step is INF or rest is INF:
        return INF
    return step + rest


def _key(value: Value) -> tuple[int, Any]:
    """Order for choosing the witness: None < finite (by upper end) < INF."""
    if value is None:
        return (0, 0)
    if value is INF:
        return (2, 0)
    return (1, value.b)


def _max(a: Value, b: Value) -> Value:
    """Interval max: encloses max(x, y) for x in a, y in b."""
    if a is None:
        return b
    if b is None:
        return a
    if a is INF or b is INF:
        return INF
    lo = a.a if a.a >= b.a else b.a
    hi = a.b if a.b >= b.b else b.b
    return mpmath.iv.mpf([lo, hi])


@attrs.frozen
class WitnessTurn:
    """One turn of a witness transcript: the query, released views, and the control
    under each store (equal unless a memory-dependent control tells them apart)."""

    query: str
    views: tuple[tuple[str, str], ...]
    control_a: Hashable
    control_b: Hashable
    note: str = ""


@attrs.frozen
class Direction:
    """sup over transcripts of log Pr[w | A] / Pr[w | B], with the attaining transcript."""

    value: Value
    witness: tuple[WitnessTurn, ...]

    @property
    def is_infinite(self) -> bool:
        return self.value is INF

    @property
    def upper(self) -> mpmath.mpf:
        with mpmath.workdps(IV_DPS), iv_precision(IV_DPS):
            return self._upper()

    def _upper(self) -> mpmath.mpf:
        if self.value is None:
            return mpmath.mpf("-inf")
        if self.value is INF:
            return mpmath.mpf("inf")
        return mpmath.mpf(self.value.b)

    @property
    def lower(self) -> mpmath.mpf:
        with mpmath.workdps(IV_DPS), iv_precision(IV_DPS):
            return self._lower()

    def _lower(self) -> mpmath.mpf:
        if self.value is None:
            return mpmath.mpf("-inf")
        if self.value is INF:
            return mpmath.mpf("inf")
        return mpmath.mpf(self.value.a)

    @property
    def midpoint(self) -> mpmath.mpf:
        if self.value is None or self.value is INF:
            return self.upper
        with mpmath.workdps(IV_DPS), iv_precision(IV_DPS):
            return mpmath.mpf(self.value.mid)


@attrs.frozen
class WorstCase:
    """Exact worst-case privacy loss over all adaptive strategies of length `horizon`."""

    a_over_b: Direction
    b_over_a: Direction
    horizon: int
    states_explored: int
    seconds: float

    @property
    def worst(self) -> Direction:
        return self.a_over_b if _key(self.a_over_b.value) >= _key(self.b_over_a.value) else self.b_over_a

    @property
    def direction(self) -> str:
        return "a_over_b" if self.worst is self.a_over_b else "b_over_a"

    def holds(self, bound: Fraction | None) -> bool:
        """Certified: True only if the interval's upper end is <= the bound (None = inf)."""
        if bound is None:
            return not self.worst.is_infinite
        upper = self.worst.upper
        return bool(upper <= mpmath.mpf(bound.numerator) / bound.denominator)


@attrs.frozen
class _Best:
    ab: Value
    ab_path: Any
    ba: Value
    ba_path: Any


def _step_ratios(
    a: ReleaseDistribution, b: ReleaseDistribution, views: Sequence[str]
) -> list[tuple[str, Value, Value]]:
    """Per released view: (view, log Pr_A - log Pr_B, log Pr_B - log Pr_A) as intervals."""
    out = []
    with iv_precision(IV_DPS):
        for view in views:
            la = a.log_probability_interval(view)
            lb = b.log_probability_interval(view)
            if la is None and lb is None:
                continue
            ab = None if la is None else (INF if lb is None else la - lb)
            ba = None if lb is None else (INF if la is None else lb - la)
            out.append((view, ab, ba))
    return out


class _Engine:
    def __init__(self, interface: Interface, store_a: Store, store_b: Store, horizon: int, queries: Sequence[Query]):
        self.interface = interface
        self.store_a = store_a
        self.store_b = store_b
        self.horizon = horizon
        self.queries = tuple(queries)
        self.turn_memo: dict[Hashable, _Best] = {}
        self.slot_memo: dict[Hashable, _Best] = {}
        self.plan_cache: dict[Hashable, tuple[SlotPlan, SlotPlan]] = {}
        self.ratio_cache: dict[Hashable, list[tuple[str, Value, Value]]] = {}
        # The rest of a turn and the future are independent of which view a slot released
        # when routing ignores released views and the control does not read them.
        self.views_irrelevant = isinstance(interface.router, FixedRouter) and not getattr(
            interface.control, "reads_views", True
        )

    @property
    def states_explored(self) -> int:
        return len(self.turn_memo) + len(self.slot_memo)

    def turn_value(self, t: int, la: Ledgers, lb: Ledgers, history: tuple[TurnRecord, ...]) -> _Best:
        if t == self.horizon:
            zero = mpmath.iv.mpf(0)
            return _Best(zero, (), zero, ())
        key = (t, la, lb, self.interface.router.state_key(history))
        cached = self.turn_memo.get(key)
        if cached is not None:
            return cached
        best = _Best(None, (), None, ())
        for query in self.queries:
            best = _combine(best, self.query_value(t, query, la, lb, history))
        self.turn_memo[key] = best
        return best

    def query_value(self, t: int, query: Query, la: Ledgers, lb: Ledgers, history: tuple[TurnRecord, ...]) -> _Best:
        slots_a = active_slots(self.interface, query, history, self.store_a)
        slots_b = active_slots(self.interface, query, history, self.store_b)
        if slots_a != slots_b:
            # The set of released slots differs: each side's transcript is impossible on the other.
            note = f"active slots differ: {list(slots_a)} vs {list(slots_b)}"
            path = ("end", query.name, None, None, note, ())
            return _Best(INF, path, INF, path)
        return self.slot_value(t, query, 0, slots_a, la, lb, history, (), (), ())

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
                plan_slot(self.interface, la, prefix, slot, self.store_a, strict=True),
                plan_slot(self.interface, lb, prefix, slot, self.store_b, strict=True),
            )
            self.plan_cache[key] = plans
        return plans

    def _ratios(self, key: Hashable, pa: SlotPlan, pb: SlotPlan) -> list[tuple[str, Value, Value]]:
        ratios = self.ratio_cache.get(key)
        if ratios is None:
            views = list(dict.fromkeys(pa.vocabulary.names + pb.vocabulary.names))
            ratios = _step_ratios(pa.distribution, pb.distribution, views)
            self.ratio_cache[key] = ratios
        return ratios

    def slot_value(
        self,
        t: int,
        query: Query,
        j: int,
        slots: tuple[str, ...],
        la: Ledgers,
        lb: Ledgers,
        history: tuple[TurnRecord, ...],
        released: tuple[tuple[str, str], ...],
        plans_a: tuple[SlotPlan, ...],
        plans_b: tuple[SlotPlan, ...],
    ) -> _Best:
        if j == len(slots):
            return self.turn_end(t, query, la, lb, history, released, plans_a, plans_b)
        memo_key = (
            t,
            query.name,
            j,
            la,
            lb,
            self.interface.router.state_key(history),
            None if self.views_irrelevant else released,
            tuple(p.admitted for p in plans_a),
            tuple(p.admitted for p in plans_b),
        )
        cached = self.slot_memo.get(memo_key)
        if cached is not None:
            return cached
        slot = slots[j]
        pa, pb = self._plans(query, slot, la, lb, history, released)
        ratio_key = (query.name, slot, la, lb, None if self.views_irrelevant else (released, history))
        ratios = self._ratios(ratio_key, pa, pb)
        best = _Best(None, (), None, ())
        if self.views_irrelevant:
            # One continuation serves every outcome: take the best step, then add the rest.
            representative = ratios[0][0] if ratios else pa.vocabulary.generic
            rest = self.slot_value(
                t,
                query,
                j + 1,
                slots,
                pa.ledgers_after,
                pb.ledgers_after,
                history,
                released + ((slot, representative),),
                plans_a + (pa,),
                plans_b + (pb,),
            )
            for view, ab, ba in ratios:
                candidate = _Best(
                    _add(ab, rest.ab),
                    ("v", slot, view, rest.ab_path),
                    _add(ba, rest.ba),
                    ("v", slot, view, rest.ba_path),
                )
                best = _combine(best, candidate)
        else:
            for view, ab, ba in ratios:
                rest = self.slot_value(
                    t,
                    query,
                    j + 1,
                    slots,
                    pa.ledgers_after,
                    pb.ledgers_after,
                    history,
                    released + ((slot, view),),
                    plans_a + (pa,),
                    plans_b + (pb,),
                )
                candidate = _Best(
                    _add(ab, rest.ab),
                    ("v", slot, view, rest.ab_path),
                    _add(ba, rest.ba),
                    ("v", slot, view, rest.ba_path),
                )
                best = _combine(best, candidate)
        self.slot_memo[memo_key] = best
        return best

    def turn_end(
        self,
        t: int,
        query: Query,
        la: Ledgers,
        lb: Ledgers,
        history: tuple[TurnRecord, ...],
        released: tuple[tuple[str, str], ...],
        plans_a: tuple[SlotPlan, ...],
        plans_b: tuple[SlotPlan, ...],
    ) -> _Best:
        control_a = observe_control(self.interface, query, history, plans_a, released, la)
        control_b = observe_control(self.interface, query, history, plans_b, released, lb)
        if control_a != control_b:
            path = ("end", query.name, control_a, control_b, "control differs", ())
            return _Best(INF, path, INF, path)
        record = TurnRecord(
            query=query.name,
            views=released,
            control=control_a,
            response="",
            admitted=tuple(p.admitted for p in plans_a),
            charges=tuple(
                (p.slot, p.charge_set if p.admitted else frozenset(), p.epsilon if p.admitted else Fraction(0))
                for p in plans_a
            ),
        )
        future = self.turn_value(t + 1, la, lb, history + (record,))
        return _Best(
            future.ab,
            ("end", query.name, control_a, control_b, "", future.ab_path),
            future.ba,
            ("end", query.name, control_a, control_b, "", future.ba_path),
        )


def _combine(a: _Best, b: _Best) -> _Best:
    ab, ab_path = (a.ab, a.ab_path) if _key(a.ab) >= _key(b.ab) else (b.ab, b.ab_path)
    ba, ba_path = (a.ba, a.ba_path) if _key(a.ba) >= _key(b.ba) else (b.ba, b.ba_path)
    return _Best(
        _max(a.ab, b.ab) if ab is not INF else INF, ab_path, _max(a.ba, b.ba) if ba is not INF else INF, ba_path
    )


def _flatten(path: Any) -> tuple[WitnessTurn, ...]:
    """Path nodes: ("v", slot, view, rest) and ("end", query, control_a, control_b, note, rest)."""
    turns = []
    views: list[tuple[str, str]] = []
    while path:
        if path[0] == "v":
            views.append((path[1], path[2]))
            path = path[3]
        else:
            _, query, control_a, control_b, note, path = path
            turns.append(WitnessTurn(query, tuple(views), control_a, control_b, note))
            views = []
    return tuple(turns)


def worst_case_loss(
    interface: Interface,
    store_a: Store,
    store_b: Store,
    horizon: int,
    queries: Sequence[Query] | None = None,
) -> WorstCase:
    """max over adaptive strategies and transcripts of |log Pr[w | A] / Pr[w | B]|, both ways.

    `queries` restricts the strategy's choices (default: the whole catalogue, every turn).
    """
    if isinstance(horizon, bool) or not isinstance(horizon, int) or not 1 <= horizon <= MAX_HORIZON:
        from dpmem_ref.errors import InputError

        raise InputError("horizon", f"an integer in 1..{MAX_HORIZON}", horizon)
    start = time.perf_counter()
    engine = _Engine(interface, store_a, store_b, horizon, queries if queries is not None else interface.queries)
    zero = zero_ledgers(interface)
    with iv_precision(IV_DPS):
        best = engine.turn_value(0, zero, zero, ())
    seconds = time.perf_counter() - start
    return WorstCase(
        a_over_b=Direction(best.ab, _flatten(best.ab_path)),
        b_over_a=Direction(best.ba, _flatten(best.ba_path)),
        horizon=horizon,
        states_explored=engine.states_explored,
        seconds=seconds,
    )


@attrs.frozen
class Replay:
    """A transcript replayed under one store: its exact log probability (views and
    controls; queries and responses cancel) and the pathwise ledgers L_a(omega)."""

    log_probability: mpmath.mpf
    ledgers: Ledgers
    turn_ledgers: tuple[Ledgers, ...]


def replay_transcript(
    interface: Interface,
    store: Store,
    turns: Sequence[TurnRecord | WitnessTurn],
    control_side: str = "a",
) -> Replay:
    """log Pr[views and controls of `turns` | store, queries], from the same plans the
    sampler uses. -inf if the store cannot produce the transcript."""
    with mpmath.workdps(max(mpmath.mp.dps, DEFAULT_DPS)):
        return _replay(interface, store, turns, control_side)


def _replay(interface: Interface, store: Store, turns: Sequence[TurnRecord | WitnessTurn], control_side: str) -> Replay:
    ledgers = zero_ledgers(interface)
    history: tuple[TurnRecord, ...] = ()
    total = mpmath.mpf(0)
    per_turn = []
    impossible = False
    for turn in turns:
        query = interface.query(turn.query)
        slots = active_slots(interface, query, history, store)
        if tuple(slot for slot, _ in turn.views) != slots:
            impossible = True
        released: tuple[tuple[str, str], ...] = ()
        plans: list[SlotPlan] = []
        if not impossible:
            for slot, view in turn.views:
                prefix = PublicPrefix(history=history, query=query, released=released)
                plan = plan_slot(interface, ledgers, prefix, slot, store, strict=True)
                total += plan.distribution.log_probability(view)
                ledgers = plan.ledgers_after
                released = released + ((slot, view),)
                plans.append(plan)
            control = observe_control(interface, query, history, plans, released, ledgers)
            expected = (
                turn.control
                if isinstance(turn, TurnRecord)
                else (turn.control_a if control_side == "a" else turn.control_b)
            )
            if control != expected:
                impossible = True
        per_turn.append(ledgers)
        record = TurnRecord(
            query=query.name,
            views=tuple(turn.views),
            control=turn.control if isinstance(turn, TurnRecord) else turn.control_a,
            response=turn.response if isinstance(turn, TurnRecord) else "",
            admitted=tuple(p.admitted for p in plans),
            charges=tuple(
                (p.slot, p.charge_set if p.admitted else frozenset(), p.epsilon if p.admitted else Fraction(0))
                for p in plans
            ),
        )
        history = history + (record,)
    if impossible:
        total = mpmath.mpf("-inf")
    return Replay(log_probability=total, ledgers=ledgers, turn_ledgers=tuple(per_turn))


def enumerate_transcripts(
    interface: Interface, store: Store, horizon: int, queries: Sequence[Query] | None = None
) -> Iterator[tuple[tuple[TurnRecord, ...], mpmath.mpf]]:
    """Every (query sequence, release sequence) with positive probability under `store`,
    with its exact log probability: the naive reference the memoized engine is checked
    against (exponential in the horizon; for small slices only)."""
    catalogue = tuple(queries if queries is not None else interface.queries)

    def extend(
        history: tuple[TurnRecord, ...], ledgers: Ledgers, logp: mpmath.mpf, t: int
    ) -> Iterator[tuple[tuple[TurnRecord, ...], mpmath.mpf]]:
        if t == horizon:
            yield history, logp
            return
        for query in catalogue:
            slots = active_slots(interface, query, history, store)
            yield from slots_extend(history, query, slots, 0, ledgers, (), (), logp, t)

    def slots_extend(
        history: tuple[TurnRecord, ...],
        query: Query,
        slots: tuple[str, ...],
        j: int,
        ledgers: Ledgers,
        released: tuple[tuple[str, str], ...],
        plans: tuple[SlotPlan, ...],
        logp: mpmath.mpf,
        t: int,
    ) -> Iterator[tuple[tuple[TurnRecord, ...], mpmath.mpf]]:
        if j == len(slots):
            control = observe_control(interface, query, history, plans, released, ledgers)
            record = TurnRecord(
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
            yield from extend(history + (record,), ledgers, logp, t + 1)
            return
        prefix = PublicPrefix(history=history, query=query, released=released)
        plan = plan_slot(interface, ledgers, prefix, slots[j], store, strict=True)
        for view in plan.distribution.support():
            step = plan.distribution.log_probability(view)
            yield from slots_extend(
                history,
                query,
                slots,
                j + 1,
                plan.ledgers_after,
                released + ((slots[j], view),),
                plans + (plan,),
                logp + step,
                t,
            )

    with mpmath.workdps(max(mpmath.mp.dps, DEFAULT_DPS)):
        yield from extend((), zero_ledgers(interface), mpmath.mpf(0), 0)
