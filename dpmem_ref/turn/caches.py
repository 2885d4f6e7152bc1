"""The slot planner's memoized steps, owned by one object per interface (`PlanCaches`).

`plan_units` (dpmem_ref.turn.plan) asks this object, never a table: each memo sits behind
the one method that fills it. Everything cached is a pure function of the interface's
frozen parts and of the key (hashable, cached-hash values; a store by identity, with the
store itself kept in the entry so an id is never mistaken for another store's), so a cache
never changes a value; every table is bounded (`KernelMemo.put`). The steps themselves are
the plain functions below (`charge_units`, `select`) and the methods' miss paths.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.core.ledgers import Units, common_scale
from dpmem_ref.core.memo import KernelMemo
from dpmem_ref.core.policy import MemoryItem, Store
from dpmem_ref.core.transcript import PublicPrefix, Query, ReleasedViews, SlotRead, TurnRecord
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.interface import ChargePlan, Interface
from dpmem_ref.mechanism.construction import validate_em_inputs
from dpmem_ref.mechanism.em import ReleaseDistribution

if TYPE_CHECKING:
    from dpmem_ref.turn.plan import TurnFrame

Route = tuple[Vocabulary, SlotRead, ChargePlan]
Selection = tuple[tuple[Fraction, ...], ReleaseDistribution]
Selections = dict[Vocabulary, Selection]
ReadSet = tuple[Store, tuple[MemoryItem, ...], Selections]
# What a slot's plan takes from the public prefix and the store before the cap test:
# (store, vocabulary, read, charge plan, scale, step, caps, items, selections).
SlotFacts = tuple[Store, Vocabulary, SlotRead, ChargePlan, int, int | None, Units, tuple[MemoryItem, ...], Selections]

_SELECTIONS_PER_READ_SET = 64


class Where:
    """`query Q, slot S` for messages, formatted only when an error is raised (an f-string
    field with no format spec: object.__format__ gives str(self))."""

    __slots__ = ("query", "slot")

    def __init__(self, query: str, slot: str) -> None:
        self.query = query
        self.slot = slot

    def __str__(self) -> str:
        return f"query {self.query}, slot {self.slot}"


def charge_units(interface: Interface, charges: ChargePlan, scale: int) -> tuple[int, int | None, Units]:
    """Line 8's eps and line 9's caps B_a as integer counts over the ledgers' scale:
    (scale, step = eps * scale, caps). An eps outside the scale widens it, exactly (the
    lcm with eps's denominator; the caller widens its `LedgerVector` to match). step is None
    when eps is not a positive exact rational (C3): no ledger arithmetic is done with it,
    and the planner refuses it in the paper's order (after C2)."""
    epsilon = charges.epsilon
    if not charges._epsilon_positive and (not isinstance(epsilon, Fraction) or epsilon <= 0):
        return scale, None, ()
    step = charges.step(scale)
    if step is None:
        scale = common_scale(scale, (epsilon,))
        step = epsilon.numerator * (scale // epsilon.denominator)
    return scale, step, interface.cap_units(scale)


def select(
    interface: Interface, vocabulary: Vocabulary, read: SlotRead, items: tuple[MemoryItem, ...], epsilon: Fraction, where: object
) -> Selection:
    """Lines 12-14: the internal scores of the read-set items (Eq. 5: the scorer reads only
    the read's public relevance and M_R), the policy-fixed sensitivity bound (Eq. 6) and the
    selector's exact release distribution (the exponential mechanism, Eq. 3), after C3's
    checks of its inputs."""
    scores = tuple(interface.scorer.scores(read.relevance_map, vocabulary, items))  # line 12
    sensitivity = interface.scorer.sensitivity(vocabulary)  # line 13
    if len(scores) != len(vocabulary.views):
        raise ContractViolation(
            "C3.score_count", f"{where}: scorer returned {len(scores)} scores for {len(vocabulary.views)} views"
        )
    validate_em_inputs(vocabulary.slot, scores, epsilon, sensitivity)  # C3
    distribution = interface.selector.distribution(vocabulary.names, scores, epsilon, sensitivity)  # line 14
    return scores, distribution


class PlanCaches:
    """The planner's memos of one interface (`caches_of`): active slots per query, routes
    per (query, slot), read sets per (read, store), a slot's facts per (query, slot,
    scale, store), and selections per (read set, vocabulary). The per-query tables serve
    only routers that declare they read neither history (G_t) nor, for routes, the views
    released earlier in the turn (C4: then those are functions of q_t alone)."""

    __slots__ = ("interface", "_static_slots", "_static_routes", "_active_slots", "_routes", "_read_sets", "_facts")

    def __init__(self, interface: Interface) -> None:
        router = interface.router
        self.interface = interface
        self._static_slots = interface.hooks.routing is None and not router.reads_history
        self._static_routes = not (router.reads_history or router.reads_released_views)
        self._active_slots: dict[Query, tuple[str, ...]] = {}
        self._routes: dict[tuple[Query, str], Route] = {}
        self._read_sets: dict[tuple[SlotRead, int], ReadSet] = {}
        self._facts: dict[tuple[Query, str, int, int], SlotFacts] = {}

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...], store: Store) -> tuple[str, ...]:
        """Algorithm 1, lines 1-2: G_t = Slot(q_t, history), in policy order."""
        if self._static_slots:  # a router that reads no history: G_t is a function of q_t
            found = self._active_slots.get(query)
            if found is None:
                found = self.interface.router.active_slots(query, ())
                KernelMemo.put(self._active_slots, query, found)
            return found
        interface = self.interface
        if interface.hooks.routing is not None:
            return interface.hooks.routing(query, history, store)
        return interface.router.active_slots(query, history)

    def route(self, query: Query, history: tuple[TurnRecord, ...], released: ReleasedViews, slot: str) -> Route:
        """V_g (C1), line 6 (ReadPolicy) and lines 7-8 (charge set Gamma*(R), Eq. 4, and eps):
        from the public prefix only (C4)."""
        interface = self.interface
        if not self._static_routes:
            read = interface.router.read(PublicPrefix(history, query, released), slot)
            return interface.vocabulary(slot), read, interface.charge_plan(read)
        found = self._routes.get((query, slot))
        if found is None:
            vocabulary = interface.vocabulary(slot)
            read = interface.router.read(PublicPrefix((), query, ()), slot)
            found = (vocabulary, read, interface.charge_plan(read))
            KernelMemo.put(self._routes, (query, slot), found)
        return found

    def read_set(self, read: SlotRead, charges: ChargePlan, store: Store) -> ReadSet:
        """Line 11: M_R, the read-set items in position order (Lemma 1: nothing else of the
        store is read), with the memo of their selections."""
        key = (read, id(store))
        found = self._read_sets.get(key)
        if found is None or found[0] is not store:
            found = (store, charges.items(store), {})
            KernelMemo.put(self._read_sets, key, found)
        return found

    def slot_facts(self, frame: TurnFrame, released: ReleasedViews, slot: str, scale: int) -> SlotFacts:
        """What the plan of `slot` takes from the public prefix and the store before the cap
        test: the route (`route`), eps and the caps over the ledgers' scale (`charge_units`)
        and the read set (`read_set`). Memoized per (q_t, slot, scale, store) for a router
        whose routes are functions of q_t alone."""
        store = frame.store
        if not self._static_routes:
            return self._slot_facts(frame, released, slot, scale)
        key = (frame.query, slot, scale, id(store))
        found = self._facts.get(key)
        if found is None or found[0] is not store:
            found = self._slot_facts(frame, released, slot, scale)
            if found[5] is not None:  # eps passed C3 (a refused eps is refused at every plan)
                KernelMemo.put(self._facts, key, found)
        return found

    def _slot_facts(self, frame: TurnFrame, released: ReleasedViews, slot: str, scale: int) -> SlotFacts:
        vocabulary, read, charges = self.route(frame.query, frame.history, released, slot)
        scale, step, caps = charge_units(self.interface, charges, scale)
        _, items, selections = self.read_set(read, charges, frame.store)
        return frame.store, vocabulary, read, charges, scale, step, caps, items, selections

    def selection(
        self, selections: Selections, vocabulary: Vocabulary, read: SlotRead, items: tuple[MemoryItem, ...], epsilon: Fraction, query: Query, slot: str
    ) -> Selection:
        """Lines 12-14 (`select`) for a read set's items, memoized in its `selections` per
        vocabulary: a pure function of (vocabulary, read, items), eps being fixed by the read."""
        found = selections.get(vocabulary)
        if found is None:
            found = select(self.interface, vocabulary, read, items, epsilon, Where(query.name, slot))
            if len(selections) < _SELECTIONS_PER_READ_SET:
                selections[vocabulary] = found
        return found


def caches_of(interface: Interface) -> PlanCaches:
    """The interface's one `PlanCaches` (kept in its private memo, made on first use)."""
    memo = interface._memo
    found: PlanCaches | None = memo.plans
    if found is None:
        found = memo.plans = PlanCaches(interface)
    return found
