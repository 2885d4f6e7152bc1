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

Two searches share those parts. When routing is fixed and the control reads neither the
history nor the released views (every file format interface), a turn's plans depend on the
prefix only through the ledgers, so the engine runs a *ledger programme*
V(t, L) = max_q [max step of q at L + V(t + 1, L')], with each query's turn summarised once
per ledger state and queries leading to the same L' merged; the state count is
T x (reachable ledger states). Otherwise it runs the general memoized search over
(turn, ledgers, router state, released views). Both use outward-rounded intervals.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import attrs
import mpmath

from dpmem_ref.interface import (
    FallbackControl,
    Interface,
    NoControl,
    PublicPrefix,
    Query,
    RawEvidenceControl,
    TopScoreControl,
    TurnRecord,
)
from dpmem_ref.mechanism import DEFAULT_DPS, ReleaseDistribution, iv_precision
from dpmem_ref.policy import Store
from dpmem_ref.turn import Ledgers, SlotPlan, active_slots, observe_control, plan_slot, turn_record, zero_ledgers

IV_DPS = 70
MAX_HORIZON = 256
# Controls known to read neither the history nor the released views (ledger programme).
LEDGER_DP_CONTROLS = (FallbackControl, NoControl, RawEvidenceControl, TopScoreControl)


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

    def _endpoint(self, end: str) -> mpmath.mpf:
        """The interval's lower ("a") or upper ("b") end at the engine's precision."""
        if self.value is None:
            return mpmath.mpf("-inf")
        if self.value is INF:
            return mpmath.mpf("inf")
        with mpmath.workdps(IV_DPS), iv_precision(IV_DPS):
            return mpmath.mpf(getattr(self.value, end))

    @property
    def upper(self) -> mpmath.mpf:
        return self._endpoint("b")

    @property
    def lower(self) -> mpmath.mpf:
        return self._endpoint("a")

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
class _Move:
    """One query at a ledger state, summarised over its slots (ledger programme)."""

    query: str
    ab: Value
    ab_views: tuple[tuple[str, str], ...]
    ba: Value
    ba_views: tuple[tuple[str, str], ...]
    next_state: int
    control_a: Hashable
    control_b: Hashable
    note: str


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
    def __init__(
        self,
        interface: Interface,
        store_a: Store,
        store_b: Store,
        horizon: int,
        queries: Sequence[Query],
        strict: bool = True,
    ):
        self.interface = interface
        self.strict = strict
        self.store_a = store_a
        self.store_b = store_b
        self.horizon = horizon
        self.queries = tuple(queries)
        self.turn_memo: dict[Hashable, _Best] = {}
        self.slot_memo: dict[Hashable, _Best] = {}
        self.plan_cache: dict[Hashable, tuple[SlotPlan, SlotPlan]] = {}
        self.ratio_cache: dict[Hashable, list[tuple[str, Value, Value]]] = {}
        self.step_cache: dict[Hashable, tuple[Value, str, Value, str]] = {}
        self.move_cache: dict[int, tuple[_Move, ...]] = {}
        self.group_cache: dict[int, tuple[tuple[int, int, int, bool], ...]] = {}
        self.ledger_memo: dict[tuple[int, int], tuple[Value, Any, Value, Any]] = {}
        self.ledger_ids: dict[tuple[Ledgers, Ledgers], int] = {}
        self.ledger_pairs: list[tuple[Ledgers, Ledgers]] = []
        self.prec = mpmath.libmp.dps_to_prec(IV_DPS)
        # The rest of a turn and the future are independent of which view a slot released
        # when routing ignores released views and the control does not read them.
        router = interface.router
        self.views_irrelevant = not getattr(router, "reads_released_views", True) and not getattr(
            interface.control, "reads_views", True
        )

        # The ledger programme needs, in addition, that routing and controls read neither
        # the store nor the history: true of the fixed router and the kernel's controls.
        self.ledger_dp = (
            self.views_irrelevant
            and not getattr(router, "reads_history", True)
            and interface.hooks.routing is None
            and isinstance(interface.control, LEDGER_DP_CONTROLS)
        )

    @property
    def states_explored(self) -> int:
        """Memoized states: (turn, ledgers) nodes plus (ledgers, query) turn summaries in the
        ledger programme; (turn, ledgers, key[, query, slot]) nodes in the general search."""
        moves = sum(len(m) for m in self.move_cache.values())
        return len(self.turn_memo) + len(self.slot_memo) + len(self.ledger_memo) + moves

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
                plan_slot(self.interface, la, prefix, slot, self.store_a, strict=self.strict),
                plan_slot(self.interface, lb, prefix, slot, self.store_b, strict=self.strict),
            )
            self.plan_cache[key] = plans
        return plans

    def _ratios(self, key: Hashable, pa: SlotPlan, pb: SlotPlan) -> list[tuple[str, Value, Value]]:
        # The per-view log ratios are a function of the two exact release distributions
        # (frozen, hashable descriptions from plan_slot) and the view names only, so
        # plans at different ledgers or turns that describe the same release share them.
        views = tuple(dict.fromkeys(pa.vocabulary.names + pb.vocabulary.names))
        key = (pa.distribution, pb.distribution, views)
        ratios = self.ratio_cache.get(key)
        if ratios is None:
            ratios = _step_ratios(pa.distribution, pb.distribution, views)
            self.ratio_cache[key] = ratios
        return ratios

    def _best_step(self, pa: SlotPlan, pb: SlotPlan) -> tuple[Value, str, Value, str]:
        """max over released views of the step log ratio, each direction, with the view."""
        views = tuple(dict.fromkeys(pa.vocabulary.names + pb.vocabulary.names))
        key = ("best", pa.distribution, pb.distribution, views)
        cached = self.step_cache.get(key)
        if cached is None:
            ab: Value = None
            ab_view = pa.vocabulary.generic
            ba: Value = None
            ba_view = pa.vocabulary.generic
            for view, step_ab, step_ba in self._ratios(key, pa, pb):
                if _key(step_ab) > _key(ab):
                    ab_view = view
                if _key(step_ba) > _key(ba):
                    ba_view = view
                ab = INF if INF in (ab, step_ab) else _max(ab, step_ab)
                ba = INF if INF in (ba, step_ba) else _max(ba, step_ba)
            cached = (_to_raw(ab), ab_view, _to_raw(ba), ba_view)
            self.step_cache[key] = cached
        return cached

    # ---- ledger dynamic programme (routing and controls ignore history and views) ----

    def ledger_id(self, la: Ledgers, lb: Ledgers) -> int:
        """A small integer naming the ledger pair (hashing tuples of Fractions is slow)."""
        key = (la, lb)
        found = self.ledger_ids.get(key)
        if found is None:
            found = len(self.ledger_pairs)
            self.ledger_ids[key] = found
            self.ledger_pairs.append(key)
        return found

    def moves(self, state: int) -> tuple[_Move, ...]:
        """Every query the strategy may pick at a ledger state, summarised: the largest
        step log ratio of its turn in each direction (with the views attaining it), the
        ledger state after it, and whether the two stores release different slots or
        controls (then the transcript is impossible under the other store: infinite).

        Valid when the router is fixed and the control reads neither history nor views:
        then a turn's plans depend on the prefix only through the ledgers, and the views
        released by one slot change neither later plans nor the future.
        """
        cached = self.move_cache.get(state)
        if cached is not None:
            return cached
        la, lb = self.ledger_pairs[state]
        result = []
        for query in self.queries:
            slots_a = active_slots(self.interface, query, (), self.store_a)
            slots_b = active_slots(self.interface, query, (), self.store_b)
            if slots_a != slots_b:
                note = f"active slots differ: {list(slots_a)} vs {list(slots_b)}"
                result.append(_Move(query.name, INF, (), INF, (), state, None, None, note))
                continue
            ab: Value = _RAW_ZERO
            ba: Value = _RAW_ZERO
            ab_views: list[tuple[str, str]] = []
            ba_views: list[tuple[str, str]] = []
            released: tuple[tuple[str, str], ...] = ()
            plans_a: list[SlotPlan] = []
            plans_b: list[SlotPlan] = []
            cur_a, cur_b = la, lb
            for slot in slots_a:
                pa, pb = self._plans(query, slot, cur_a, cur_b, (), released)
                step_ab, view_ab, step_ba, view_ba = self._best_step(pa, pb)
                ab = _raw_add(step_ab, ab, self.prec)
                ba = _raw_add(step_ba, ba, self.prec)
                ab_views.append((slot, view_ab))
                ba_views.append((slot, view_ba))
                released = released + ((slot, view_ab),)
                plans_a.append(pa)
                plans_b.append(pb)
                cur_a, cur_b = pa.ledgers_after, pb.ledgers_after
            control_a = observe_control(self.interface, query, (), plans_a, released, cur_a)
            control_b = observe_control(self.interface, query, (), plans_b, released, cur_b)
            note = ""
            if control_a != control_b:
                ab = None if ab is None else INF
                ba = None if ba is None else INF
                note = "control differs"
            result.append(
                _Move(
                    query.name,
                    ab,
                    tuple(ab_views),
                    ba,
                    tuple(ba_views),
                    self.ledger_id(cur_a, cur_b),
                    control_a,
                    control_b,
                    note,
                )
            )
        moves = tuple(result)
        self.move_cache[state] = moves
        return moves

    def grouped_moves(self, state: int) -> tuple[tuple[int, int, int, bool], ...]:
        """Moves grouped by the ledger state they lead to: within a group the future is the
        same, so only the largest step matters (per direction). Returns (best index for
        a-over-b, best index for b-over-a, next state, terminal)."""
        cached = self.group_cache.get(state)
        if cached is not None:
            return cached
        moves = self.moves(state)
        groups: dict[Hashable, list[int]] = {}
        for index, move in enumerate(moves):
            target: Hashable = ("terminal", index) if move.note else move.next_state
            best = groups.get(target)
            if best is None:
                groups[target] = [index, index]
                continue
            if _raw_greater(move.ab, moves[best[0]].ab):
                best[0] = index
            if _raw_greater(move.ba, moves[best[1]].ba):
                best[1] = index
        grouped = tuple(
            (ab_index, ba_index, moves[ab_index].next_state, bool(moves[ab_index].note))
            for ab_index, ba_index in groups.values()
        )
        self.group_cache[state] = grouped
        return grouped

    def ledger_value(self, t: int, state: int) -> tuple[Value, Value]:
        """V(t, ledgers): the worst-case loss of the remaining turns, both directions."""
        if t == self.horizon:
            return _RAW_ZERO, _RAW_ZERO
        key = (t, state)
        cached = self.ledger_memo.get(key)
        if cached is not None:
            return cached[0], cached[2]
        moves = self.moves(state)
        prec = self.prec
        ab: Value = None
        ba: Value = None
        ab_choice: tuple[int, bool] | None = None
        ba_choice: tuple[int, bool] | None = None
        for ab_index, ba_index, next_state, terminal in self.grouped_moves(state):
            if terminal:
                future_ab: Value = _RAW_ZERO
                future_ba: Value = _RAW_ZERO
            else:
                future_ab, future_ba = self.ledger_value(t + 1, next_state)
            candidate_ab = _raw_add(moves[ab_index].ab, future_ab, prec)
            candidate_ba = _raw_add(moves[ba_index].ba, future_ba, prec)
            if ab_choice is None or _raw_greater(candidate_ab, ab):
                ab_choice = (ab_index, terminal)
            if ba_choice is None or _raw_greater(candidate_ba, ba):
                ba_choice = (ba_index, terminal)
            ab = _raw_max(ab, candidate_ab)
            ba = _raw_max(ba, candidate_ba)
        self.ledger_memo[key] = (ab, ab_choice, ba, ba_choice)
        return ab, ba

    def ledger_witness(self, direction: str) -> Any:
        """Follow the memoized choices from the start: the path of the worst transcript."""
        state = self.ledger_id(zero_ledgers(self.interface), zero_ledgers(self.interface))
        turns = []
        for t in range(self.horizon):
            entry = self.ledger_memo[(t, state)]
            choice = entry[1] if direction == "ab" else entry[3]
            if choice is None:
                break
            index, terminal = choice
            move = self.moves(state)[index]
            turns.append((move, move.ab_views if direction == "ab" else move.ba_views))
            if terminal:
                break
            state = move.next_state
        path: Any = ()
        for move, views in reversed(turns):
            path = ("end", move.query, move.control_a, move.control_b, move.note, path)
            for slot, view in reversed(views):
                path = ("v", slot, view, path)
        return path

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
        record = turn_record(query, released, control_a, "", plans_a)
        future = self.turn_value(t + 1, la, lb, history + (record,))
        return _Best(
            future.ab,
            ("end", query.name, control_a, control_b, "", future.ab_path),
            future.ba,
            ("end", query.name, control_a, control_b, "", future.ba_path),
        )


# Raw intervals for the ledger programme: (lo, hi) pairs of mpmath's internal mpf tuples
# with outward (directed) rounding, the representation mpmath.iv uses underneath, without
# its per-operation object overhead. None and INF keep their meaning.
_RAW_ZERO = (mpmath.libmp.fzero, mpmath.libmp.fzero)


def _to_raw(value: Value) -> Value:
    if value is None or value is INF:
        return value
    return tuple(value._mpi_)


def _from_raw(value: Value) -> Value:
    if value is None or value is INF:
        return value
    return mpmath.iv.make_mpf(value)


def _raw_add(step: Value, rest: Value, prec: int) -> Value:
    if step is None or rest is None:
        return None
    if step is INF or rest is INF:
        return INF
    return (
        mpmath.libmp.mpf_add(step[0], rest[0], prec, mpmath.libmp.round_floor),
        mpmath.libmp.mpf_add(step[1], rest[1], prec, mpmath.libmp.round_ceiling),
    )


def _raw_greater(a: Value, b: Value) -> bool:
    """The witness order of `_key` on raw intervals: None < finite (by upper end) < INF."""
    rank_a = 0 if a is None else (2 if a is INF else 1)
    rank_b = 0 if b is None else (2 if b is INF else 1)
    if rank_a != rank_b or rank_a != 1:
        return rank_a > rank_b
    return bool(mpmath.libmp.mpf_gt(a[1], b[1]))


def _raw_max(a: Value, b: Value) -> Value:
    """Encloses max(x, y) for x in a, y in b."""
    if a is None:
        return b
    if b is None:
        return a
    if a is INF or b is INF:
        return INF
    lo = a[0] if mpmath.libmp.mpf_ge(a[0], b[0]) else b[0]
    hi = a[1] if mpmath.libmp.mpf_ge(a[1], b[1]) else b[1]
    return (lo, hi)


def _combine(a: _Best, b: _Best) -> _Best:
    """The interval max of both directions; the witness path of the larger upper end."""
    ab_path = a.ab_path if _key(a.ab) >= _key(b.ab) else b.ab_path
    ba_path = a.ba_path if _key(a.ba) >= _key(b.ba) else b.ba_path
    return _Best(_max(a.ab, b.ab), ab_path, _max(a.ba, b.ba), ba_path)


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
    strict: bool = True,
) -> WorstCase:
    """max over adaptive strategies and transcripts of |log Pr[w | A] / Pr[w | B]|, both ways.

    `queries` restricts the strategy's choices (default: the whole catalogue, every turn).
    strict=True refuses a contract-breaking interface (ContractViolation, as `run_turn`);
    strict=False audits it as deployed, so the loss shows how far a broken part breaks
    the bound (the auditor's mode).
    """
    if isinstance(horizon, bool) or not isinstance(horizon, int) or not 1 <= horizon <= MAX_HORIZON:
        from dpmem_ref.errors import InputError

        raise InputError("horizon", f"an integer in 1..{MAX_HORIZON}", horizon)
    start = time.perf_counter()
    engine = _Engine(
        interface, store_a, store_b, horizon, queries if queries is not None else interface.queries, strict=strict
    )
    zero = zero_ledgers(interface)
    with iv_precision(IV_DPS):
        if engine.ledger_dp:
            start_state = engine.ledger_id(zero, zero)
            ab, ba = engine.ledger_value(0, start_state)
            best = _Best(_from_raw(ab), engine.ledger_witness("ab"), _from_raw(ba), engine.ledger_witness("ba"))
        else:
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
    strict: bool = True,
) -> Replay:
    """log Pr[views and controls of `turns` | store, queries], from the same plans the
    sampler uses. -inf if the store cannot produce the transcript. strict as in
    `worst_case_loss`."""
    with mpmath.workdps(max(mpmath.mp.dps, DEFAULT_DPS)):
        return _replay(interface, store, turns, control_side, strict)


def _replay(
    interface: Interface,
    store: Store,
    turns: Sequence[TurnRecord | WitnessTurn],
    control_side: str,
    strict: bool,
) -> Replay:
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
                plan = plan_slot(interface, ledgers, prefix, slot, store, strict=strict)
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
        record = turn_record(
            query,
            tuple(turn.views),
            turn.control if isinstance(turn, TurnRecord) else turn.control_a,
            turn.response if isinstance(turn, TurnRecord) else "",
            plans,
        )
        history = history + (record,)
    if impossible:
        total = mpmath.mpf("-inf")
    return Replay(log_probability=total, ledgers=ledgers, turn_ledgers=tuple(per_turn))


def enumerate_transcripts(
    interface: Interface,
    store: Store,
    horizon: int,
    queries: Sequence[Query] | None = None,
    strict: bool = True,
) -> Iterator[tuple[tuple[TurnRecord, ...], mpmath.mpf]]:
    """Every (query sequence, release sequence) with positive probability under `store`,
    with its exact log probability: the naive reference the memoized engine is checked
    against (exponential in the horizon; for small slices only). strict as in
    `worst_case_loss`."""
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
            record = turn_record(query, released, control, "", plans)
            yield from extend(history + (record,), ledgers, logp, t + 1)
            return
        prefix = PublicPrefix(history=history, query=query, released=released)
        plan = plan_slot(interface, ledgers, prefix, slots[j], store, strict=strict)
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
