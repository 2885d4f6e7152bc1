"""Planning one slot (dpmem_ref.turn.plan): `plan_slot` / `plan_units` over a `TurnFrame`,
the SlotPlan's fields on every branch (admitted, capped, fallen back), the run-time C2, C3 and
C5 checks with their messages, routing on the public prefix, an eps off the ledger scale, the
admission call of a cap rule, and zero ledgers.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest

from dpmem_ref import (
    ContractViolation,
    FunctionScorer,
    InputError,
    Interface,
    InterfaceState,
    MemoryItem,
    PublicPrefix,
    Query,
    SlotRead,
    TurnRecord,
    View,
    Vocabulary,
    plan_slot,
)
from dpmem_ref.turn.plan import zero_ledgers
from tests.kernel_fixtures import (
    XYZW_STORE,
    PrefixNarrowingRouter,
    interface_reading_1,
    interface_reading_1_3,
    item,
    make_store,
)


def test_zero_ledgers_are_exact_zeros_in_policy_order():
    assert zero_ledgers(interface_reading_1_3()) == (Fraction(0), Fraction(0))
    assert InterfaceState.initial(interface_reading_1_3()).ledgers == zero_ledgers(interface_reading_1_3())


def test_plan_slot_names_a_ledger_vector_of_the_wrong_length():
    interface = interface_reading_1_3()
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    with pytest.raises(InputError) as error:
        plan_slot(interface, (Fraction(0),), prefix, "g", XYZW_STORE)
    assert str(error.value) == "ledgers: expected 2 values, one per attribute in policy order, found 1"


def test_plan_slot_edges():
    import attrs

    from dpmem_ref import PrivateHooks

    interface = interface_reading_1()
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    # A fallback plan carries no scores (nothing was scored).
    refused = plan_slot(interface, (Fraction(1), Fraction(0)), prefix, "g", make_store())
    assert not refused.admitted and refused.scores is None
    assert refused.distribution.support() == ("g.gen",)
    # A ledger vector of the wrong length is refused even when the read falls back.
    with pytest.raises(ValueError):
        plan_slot(interface, (Fraction(1),), prefix, "g", make_store())
    # A store-dependent vocabulary hook (a C1 breach, strict=False) is asked with the slot and store.
    small = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")
    large = Vocabulary("g", (View("g.gen"), View("g.v1"), View("g.v2")), "g.gen")
    hooked = attrs.evolve(
        interface,
        scorer=FunctionScorer(lambda r, v, i: tuple(Fraction(0) for _ in v.views), Fraction(1)),
        hooks=PrivateHooks(vocabulary=lambda slot, memory: large if slot == "g" and "x" in memory.items[0].tags else small),
    )
    assert plan_slot(hooked, (Fraction(0), Fraction(0)), prefix, "g", make_store(), strict=False).vocabulary == large
    assert plan_slot(hooked, (Fraction(0), Fraction(0)), prefix, "g", make_store(p1=item("v")), strict=False).vocabulary == small


def test_plan_fields_on_every_branch():
    import attrs

    from dpmem_ref import NoCap, PrivateHooks

    interface = interface_reading_1()
    query = interface.query("q")
    prefix = PublicPrefix(history=(), query=query, released=())
    admitted = plan_slot(interface, (Fraction(0), Fraction(0)), prefix, "g", make_store())
    refused = plan_slot(interface, (Fraction(1), Fraction(0)), prefix, "g", make_store())
    for plan in (admitted, refused):
        assert plan.read == query.reads[0] and plan.charge_set == frozenset({"a"})
        assert plan.items == (item("x"),) and plan.epsilon == Fraction(1, 2)
    assert admitted.scores == (Fraction(0), Fraction(1))
    # A fallback decided from the scores (a C4 breach, strict=False) keeps the scores it read.
    seen = []

    def fallback(scores):
        seen.append(tuple(scores))
        return scores[1] == 1

    hooked = attrs.evolve(interface, hooks=PrivateHooks(fallback=fallback))
    plan = plan_slot(hooked, (Fraction(0), Fraction(0)), prefix, "g", make_store(), strict=False)
    assert not plan.admitted and plan.scores == (Fraction(0), Fraction(1)) and seen == [(Fraction(0), Fraction(1))]
    assert plan.ledgers_after == (Fraction(0), Fraction(0)) and plan.distribution.support() == ("g.gen",)
    # Without the prospective check, the C5 assertion names where the cap was crossed.
    uncapped = attrs.evolve(interface, cap_rule=NoCap())
    with pytest.raises(ContractViolation) as error:
        plan_slot(uncapped, (Fraction(1), Fraction(0)), prefix, "g", make_store())
    assert error.value.condition == "C5"
    assert error.value.message == "query q, slot g, attribute a: ledger 3/2 exceeds cap 1"


def test_plans_that_fall_back_are_not_admitted_and_name_false():
    from dpmem_ref import PrivateHooks

    interface = interface_reading_1_3()
    prefix = PublicPrefix((), interface.query("q"), ())
    # L_a = 1 = B_a: the cap rule refuses eps = 1/2; nothing is scored.
    capped = plan_slot(interface, (Fraction(1), Fraction(0)), prefix, "g", XYZW_STORE)
    assert capped.admitted is False and capped.scores is None
    assert capped.distribution.support() == ("g.gen",) and capped.ledgers_after == (Fraction(1), Fraction(0))
    # A score-reading fallback hook (a C4 breach, strict=False): scored, then not admitted.
    hooked = attrs.evolve(interface, hooks=PrivateHooks(fallback=lambda scores: True))
    fallen = plan_slot(hooked, zero_ledgers(interface), prefix, "g", XYZW_STORE, strict=False)
    assert fallen.admitted is False and fallen.scores == (Fraction(0), Fraction(1))
    assert fallen.distribution.support() == ("g.gen",) and fallen.ledgers_after == zero_ledgers(interface)


def test_plan_slot_routes_on_the_history_and_the_released_views():
    interface = interface_reading_1_3(PrefixNarrowingRouter())
    query = interface.query("q")
    ledgers = zero_ledgers(interface)
    record = TurnRecord("q", (("g", "g.v1"),), None, "", (True,), (("g", frozenset({"a", "b"}), Fraction(1, 2)),))
    fresh = plan_slot(interface, ledgers, PublicPrefix((), query, ()), "g", XYZW_STORE)
    after_history = plan_slot(interface, ledgers, PublicPrefix((record,), query, ()), "g", XYZW_STORE)
    after_release = plan_slot(interface, ledgers, PublicPrefix((), query, (("h", "h.v1"),)), "g", XYZW_STORE)
    assert fresh.read.positions == frozenset({1, 3}) and fresh.charge_set == frozenset({"a", "b"})
    assert after_history.read.positions == frozenset({1}) and after_history.charge_set == frozenset({"a"})
    assert after_release.read.positions == frozenset({1, 2}) and after_release.charge_set == frozenset({"a", "b"})


def test_a_slot_is_scored_once_per_read_and_store_object():
    calls = []

    def score(relevance, vocabulary, items):
        calls.append(items)
        return (Fraction(0), Fraction(1))

    interface = attrs.evolve(interface_reading_1_3(), scorer=FunctionScorer(score, Fraction(1)))
    prefix = PublicPrefix((), interface.query("q"), ())
    other = XYZW_STORE.replace({1: MemoryItem(frozenset({"v"}), "v")}, name="M'")
    plans = [plan_slot(interface, zero_ledgers(interface), prefix, "g", store) for store in (XYZW_STORE, XYZW_STORE, other, XYZW_STORE)]
    assert [plan.scores for plan in plans] == [(Fraction(0), Fraction(1))] * 4
    assert [item.tags for items in calls for item in items] == [{"x"}, {"z"}, {"v"}, {"z"}]  # M, then M' (memo kept M)


def test_c2_message_names_query_slot_and_attribute():
    interface = interface_reading_1(under_charged=True)
    prefix = PublicPrefix(history=(), query=interface.query("under"), released=())
    with pytest.raises(ContractViolation) as error:
        plan_slot(interface, (Fraction(0), Fraction(0)), prefix, "g", make_store())
    assert error.value.condition == "C2"
    assert error.value.message.startswith("query under, slot g, attribute b: ")


def test_a_turn_frame_is_strict_by_default():
    from dpmem_ref import ContractViolation
    from dpmem_ref.core.ledgers import LedgerVector
    from dpmem_ref.turn.plan import TurnFrame, plan_units

    base = interface_reading_1_3()
    under = Query("under", "under", (SlotRead("g", frozenset({2}), charge=frozenset({"a"})),))
    interface = attrs.evolve(base, queries=base.queries + (under,))
    with pytest.raises(ContractViolation) as error:
        plan_units(TurnFrame(interface, XYZW_STORE, under, (), 0, ("g",)), LedgerVector((0, 0), interface.ledger_scale), (), "g")
    assert error.value.code == "C2.uncharged_read"


def test_the_c5_assertion_checks_the_ledgers_it_moved():
    """A ledger the selection does not charge is not re-checked (it did not move): an
    over-cap uncharged ledger does not turn into a C5 at this read. The public entry points
    refuse such a ledger at the boundary (InputError), so the planner's inner
    function is driven directly, on integer counts over scale 2."""
    from dpmem_ref.core.ledgers import LedgerVector
    from dpmem_ref.turn import TurnFrame, plan_units

    interface = interface_reading_1()
    query = interface.query("q")
    plan = plan_units(TurnFrame(interface, make_store(), query, (), 0, ("g",)), LedgerVector((0, 6), 2), (), "g")  # b = 3 > B_b = 2, uncharged
    assert plan.admitted and plan.ledgers_after == (Fraction(1, 2), Fraction(3))
    with pytest.raises(InputError, match=r"ledgers\[1\]: expected a ledger in \[0, B_b\] = \[0, 2\], found '3'"):
        plan_slot(interface, (Fraction(0), Fraction(3)), PublicPrefix(history=(), query=query, released=()), "g", make_store())


class _OffCatalogueRouter(PrefixNarrowingRouter):
    """A public router (C4): after one turn of history slot g reads position 3 alone, a
    read charged to b only, which no catalogued read declares."""

    name = "off-catalogue"
    reads_released_views = False

    def read(self, prefix, slot):
        read = prefix.query.read_for(slot)
        return attrs.evolve(read, positions=frozenset({3})) if prefix.history else read


def _preallocated_interface(router=None, **parts) -> Interface:
    """Caps a = 1, b = 2 with the public plan C_a = 2, C_b = 3: the catalogue's only read
    (g over {1, 3}, charged to {a, b}) costs min(1/2, 2/3) = 1/2, so the ledger scale is 2;
    a read charged to b alone costs 2/3, off that scale."""
    from dpmem_ref import PreallocatedBudget

    interface = attrs.evolve(interface_reading_1_3(), budget=PreallocatedBudget.from_mapping({"a": 2, "b": 3}), **parts)
    return interface if router is None else attrs.evolve(interface, router=router)


def test_an_eps_off_the_ledger_scale_is_charged_exactly_on_a_wider_scale():
    from dpmem_ref import run_turn
    from dpmem_ref.mechanism.randomness import SeededRandomSource

    interface = _preallocated_interface(_OffCatalogueRouter())
    assert interface.ledger_scale == 2
    query = interface.query("q")
    record = TurnRecord("q", (("g", "g.v1"),), None, "", (True,), (("g", frozenset({"a", "b"}), Fraction(1, 2)),))
    plan = plan_slot(interface, zero_ledgers(interface), PublicPrefix((record,), query, ()), "g", XYZW_STORE)
    assert (plan.charge_set, plan.epsilon, plan.admitted) == (frozenset({"b"}), Fraction(2, 3), True)
    assert plan.ledgers_after == (Fraction(0), Fraction(2, 3))
    assert all(type(value) is Fraction for value in plan.ledgers_after)
    late = plan_slot(interface, (Fraction(1, 2), Fraction(3, 2)), PublicPrefix((record,), query, ()), "g", XYZW_STORE)
    assert not late.admitted and late.ledgers_after == (Fraction(1, 2), Fraction(3, 2))  # 3/2 + 2/3 > 2
    # A whole run: {a, b} at 1/2 once, then b alone at 2/3 until its cap is reached exactly.
    state = InterfaceState.initial(interface)
    ledgers = []
    for turn in range(5):
        state = run_turn(interface, state, "q", XYZW_STORE, SeededRandomSource(turn)).state
        ledgers.append(state.ledgers)
    assert ledgers == [
        (Fraction(1, 2), Fraction(1, 2)),
        (Fraction(1, 2), Fraction(7, 6)),
        (Fraction(1, 2), Fraction(11, 6)),
        (Fraction(1, 2), Fraction(11, 6)),  # 11/6 + 2/3 > 2: the generic fallback, no charge
        (Fraction(1, 2), Fraction(11, 6)),
    ]


@attrs.frozen
class _ConstantBudget:
    value: Fraction
    name: str = "constant"

    def epsilon(self, charge_set, caps):
        return self.value


@pytest.mark.parametrize("epsilon", [Fraction(0), Fraction(-1, 2)])
def test_a_budget_rule_that_gives_no_positive_eps_is_refused_at_the_plan(epsilon):
    from dpmem_ref import ContractViolation

    interface = attrs.evolve(interface_reading_1_3(), budget=_ConstantBudget(epsilon))
    prefix = PublicPrefix((), interface.query("q"), ())
    with pytest.raises(ContractViolation) as error:
        plan_slot(interface, zero_ledgers(interface), prefix, "g", XYZW_STORE)
    assert error.value.code == "C3.invalid_epsilon"
    assert str(error.value).endswith(f"slot g: epsilon must be a positive exact rational, found {epsilon}")


def test_a_budget_rule_whose_eps_is_a_float_is_refused_at_the_plan():
    """0.5 is not an exact rational (the ledgers are exact): refused as C3, even though positive."""
    interface = attrs.evolve(interface_reading_1_3(), budget=_ConstantBudget(0.5))  # type: ignore[arg-type]
    with pytest.raises(ContractViolation) as error:
        plan_slot(interface, zero_ledgers(interface), PublicPrefix((), interface.query("q"), ()), "g", XYZW_STORE)
    assert error.value.code == "C3.invalid_epsilon"
    assert str(error.value).endswith("slot g: epsilon must be a positive exact rational, found 0.5")


class _ExactRational(Fraction):
    """A Fraction subclass: still a positive exact rational eps (not the plain-Fraction fast path)."""


def test_a_positive_eps_of_a_fraction_subclass_plans_like_the_plain_fraction():
    plain = attrs.evolve(interface_reading_1_3(), budget=_ConstantBudget(Fraction(1, 2)))
    subclass = attrs.evolve(interface_reading_1_3(), budget=_ConstantBudget(_ExactRational(1, 2)))
    planned = []
    for interface in (plain, subclass):
        plan = plan_slot(interface, zero_ledgers(interface), PublicPrefix((), interface.query("q"), ()), "g", XYZW_STORE)
        planned.append((plan.public_shape, plan.ledgers_after, plan.distribution.support()))
    assert planned[1] == planned[0]
    assert planned[0][0][2:4] == (Fraction(1, 2), True)


class _RecordingCapRule:
    """Line 9 through `admits` (not declared prospective): records what it is asked."""

    name = "recording"
    violates = None
    prospective = False

    def __init__(self) -> None:
        self.calls: list[tuple[dict, dict, frozenset, Fraction]] = []

    def admits(self, ledgers, caps, charge_set, epsilon):
        self.calls.append((dict(ledgers), dict(caps), charge_set, epsilon))
        return all(ledgers[a] + epsilon <= caps[a] for a in charge_set)


def test_a_cap_rule_without_the_prospective_form_is_asked_with_the_plans_eps():
    rule = _RecordingCapRule()
    interface = attrs.evolve(_preallocated_interface(), cap_rule=rule)
    prefix = PublicPrefix((), interface.query("q"), ())
    admitted = plan_slot(interface, (Fraction(1, 4), Fraction(1)), prefix, "g", XYZW_STORE)
    refused = plan_slot(interface, (Fraction(3, 4), Fraction(1)), prefix, "g", XYZW_STORE)
    assert admitted.admitted and not refused.admitted
    caps = {"a": Fraction(1), "b": Fraction(2)}
    both = frozenset({"a", "b"})
    assert rule.calls == [
        ({"a": Fraction(1, 4), "b": Fraction(1)}, caps, both, Fraction(1, 2)),
        ({"a": Fraction(3, 4), "b": Fraction(1)}, caps, both, Fraction(1, 2)),
    ]


class _PerSlotBoundScorer:
    """Scores (0, 1) with a sensitivity bound declared per slot (the scorer protocol's
    `sensitivity(vocabulary)`): 1/4 over slot g, 1 over slot h."""

    name = "per-slot-bound"

    def scores(self, relevance, vocabulary, items):
        return (Fraction(0), Fraction(1))

    def sensitivity(self, vocabulary):
        return {"g": Fraction(1, 4), "h": Fraction(1)}[vocabulary.slot]

    def exact_sensitivity(self, vocabulary):
        return None


def test_the_release_law_uses_the_sensitivity_bound_of_the_planned_slots_vocabulary():
    """Eq. (7): x_v = eps * u_v / (2 Delta_g), with Delta_g what the scorer declares for the
    vocabulary of the slot being planned (eps = 1/2, Delta_g = 1/4: x = (0, 1))."""
    interface = attrs.evolve(interface_reading_1_3(), scorer=_PerSlotBoundScorer())
    plan = plan_slot(interface, zero_ledgers(interface), PublicPrefix((), interface.query("q"), ()), "g", XYZW_STORE)
    assert plan.epsilon == Fraction(1, 2) and plan.distribution.exponents == (Fraction(0), Fraction(1))


class _CountingSlotsRouter:
    """Declares whether it reads the history; counts the G_t it is asked for."""

    name = "counting-slots"
    violates = None
    reads_released_views = False

    def __init__(self, reads_history):
        self.reads_history = reads_history
        self.asked = []

    def active_slots(self, query, history):
        self.asked.append(len(history))
        return tuple(read.slot for read in query.reads)

    def read(self, prefix, slot):
        return prefix.query.read_for(slot)

    def state_key(self, history):
        return len(history) if self.reads_history else ()


@pytest.mark.parametrize("reads_history", [False, True])
def test_active_slots_asks_a_router_that_reads_no_history_once_per_query(reads_history):
    """Algorithm 1, lines 1-2: G_t = Slot(q_t, history). A router that reads no history gives
    a function of q_t alone (asked once, with an empty history); one that does is asked each time."""
    from dpmem_ref.turn.plan import active_slots

    router = _CountingSlotsRouter(reads_history)
    interface = interface_reading_1_3(router)
    query = interface.query("q")
    history = (TurnRecord("q", (("g", "g.gen"),), None, "", (False,), (("g", frozenset(), Fraction(0)),)),)
    assert [active_slots(interface, query, h, XYZW_STORE) for h in ((), history, history)] == [("g",)] * 3
    assert router.asked == ([0, 1, 1] if reads_history else [0])


def test_active_slots_hands_the_store_to_a_memory_routing_hook():
    """A memory-dependent routing hook (a C4 breach) decides G_t from the store it is given:
    slot g is active only while position 1 holds evidence x."""
    from dpmem_ref import PrivateHooks
    from dpmem_ref.turn.plan import active_slots

    def routing(query, history, store):
        return ("g",) if "x" in store.items[0].tags else ()

    interface = attrs.evolve(interface_reading_1_3(), hooks=PrivateHooks(routing=routing))
    query = interface.query("q")
    assert active_slots(interface, query, (), XYZW_STORE) == ("g",)
    assert active_slots(interface, query, (), make_store(p1=item("v"))) == ()


def test_a_slot_plan_carries_one_ledger_form():
    """The ledgers after the charge are the `LedgerVector` alone; `ledgers_after` is its
    Fraction view, made when asked."""
    from dpmem_ref import SlotPlan

    interface = interface_reading_1_3()
    plan = plan_slot(interface, zero_ledgers(interface), PublicPrefix((), interface.query("q"), ()), "g", XYZW_STORE)
    assert "ledgers_after" not in SlotPlan._fields and "vector_after" in SlotPlan._fields
    assert plan.ledgers_after == plan.vector_after.ledgers() == (Fraction(1, 2), Fraction(1, 2))
