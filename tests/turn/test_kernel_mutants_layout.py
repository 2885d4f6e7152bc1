"""Tests that kill mutants mutmut found surviving in the kernel's core modules after the
Round-2 restructure (issue 15, point 3; the mutated modules are `[tool.mutmut]
only_mutate` in pyproject.toml, the equivalent survivors `scripts/mutation_equivalents.toml`):
the turn planner, the ledgers and the loss type here; `exact`, `em_sampler` and the bucketed
EM round in test_kernel_mutants_exact.py.

Behaviour through public names where there is one. Error messages are asserted whole
(HELPERS rules: one line naming the field).
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import mpmath
import pytest

from dpmem_ref import (
    Attribute,
    FunctionScorer,
    InputError,
    Interface,
    InterfaceState,
    Layout,
    MemoryItem,
    OnlineBudget,
    Policy,
    PublicPrefix,
    Query,
    SlotRead,
    Store,
    TapeSource,
    TurnRecord,
    View,
    Vocabulary,
    begin_turn,
    plan_slot,
)
from dpmem_ref.analysis import IMPOSSIBLE, INFINITE, ZERO, Loss
from dpmem_ref.turn.plan import zero_ledgers

# ---------------------------------------------------------------------------------------
# analysis.loss: the witness order, messages, hashing and repr


def test_equal_kinds_never_rank_above_each_other():
    one = Loss.of_fractions(Fraction(1), Fraction(1))
    for loss in (IMPOSSIBLE, INFINITE, ZERO, one):
        assert not loss.ranks_above(loss)
    assert not INFINITE.ranks_above(Loss(INFINITE.kind)) and not IMPOSSIBLE.ranks_above(Loss(IMPOSSIBLE.kind))


def test_add_rounds_outward_and_keeps_a_zero_end():
    from dpmem_ref.analysis.loss import PREC

    one = Loss.of_fractions(Fraction(1), Fraction(1))
    tiny = Loss.of_fractions(Fraction(1, 2**300), Fraction(1, 2**300))
    # 1 + 2**-300 needs 301 bits: the ends round down / up at the working precision.
    assert one.add(tiny).ends() == (Fraction(1), 1 + Fraction(1, 2 ** (PREC - 1)))
    half_open = Loss.of_fractions(Fraction(0), Fraction(1))  # one end 0 is not the exact zero
    assert one.add(half_open).ends() == (Fraction(1), Fraction(2))
    assert half_open.add(one).ends() == (Fraction(1), Fraction(2))
    assert one.add(ZERO) is one and ZERO.add(one) is one


def test_only_a_finite_loss_has_ends_or_an_interval():
    for loss in (IMPOSSIBLE, INFINITE):
        with pytest.raises(ValueError) as error:
            loss.ends()
        assert str(error.value) == "only a finite loss has exact ends"
        with pytest.raises(ValueError) as error:
            loss.to_interval()
        assert str(error.value) == "only a finite loss is an interval"
        with pytest.raises(ValueError) as error:
            loss.neg()
        assert str(error.value) == "only a finite loss has a negation"
    for ends in (["-inf", 0], [0, "inf"]):
        with pytest.raises(ValueError) as error:
            Loss.interval(mpmath.iv.mpf(ends))
        assert str(error.value) == "a finite loss needs finite interval ends"


def test_loss_hash_follows_the_value():
    losses = [IMPOSSIBLE, INFINITE, ZERO] + [Loss.of_fractions(Fraction(k, 7), Fraction(k, 5)) for k in range(1, 6)]
    assert hash(Loss.of_fractions(Fraction(1, 7), Fraction(1, 5))) == hash(losses[3])
    # Distinct values spread over distinct hashes (integers and tuples of integers hash
    # deterministically): a dict of the engine's losses does not degrade to one bucket.
    assert len({hash(loss) for loss in losses}) == len(losses)


def test_a_finite_loss_prints_both_ends_to_twelve_digits():
    assert repr(Loss.of_fractions(Fraction(1, 3), Fraction(2, 3))) == "Loss([0.333333333333, 0.666666666667])"
    assert repr(Loss.of_fractions(Fraction(-1, 7), Fraction(1, 7))) == "Loss([-0.142857142857, 0.142857142857])"
    assert (repr(ZERO), repr(IMPOSSIBLE), repr(INFINITE)) == ("Loss(0)", "Loss(impossible)", "Loss(inf)")


# ---------------------------------------------------------------------------------------
# turn: plan_slot's inputs, zero ledgers, rebasing a cursor

LAYOUT = Layout(("g", "g", "g", "h"))
POLICY = Policy(
    LAYOUT,
    (Attribute("a", frozenset({1, 2}), Fraction(1)), Attribute("b", frozenset({2, 3}), Fraction(2))),
)
STORE = Store.from_mapping(LAYOUT, {i: MemoryItem(frozenset({t}), t) for i, t in enumerate("xyzw", start=1)}, "M")


class _PrefixRouter:
    """A public router (C4) whose read of slot g narrows with the prefix: position 1 alone
    after one turn of history, positions {1, 2} once a view was released this turn."""

    name = "prefix-narrowing"
    violates = None
    reads_history = True
    reads_released_views = True

    def active_slots(self, query, history):
        return tuple(read.slot for read in query.reads)

    def read(self, prefix, slot):
        read = prefix.query.read_for(slot)
        if prefix.history:
            return attrs.evolve(read, positions=frozenset({1}))
        if prefix.released:
            return attrs.evolve(read, positions=frozenset({1, 2}))
        return read

    def state_key(self, history):
        return len(history)


def _interface(router=None) -> Interface:
    interface = Interface(
        policy=POLICY,
        vocabularies=(
            Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen"),
            Vocabulary("h", (View("h.gen"), View("h.v1")), "h.gen"),
        ),
        queries=(Query("q", "q", (SlotRead("g", frozenset({1, 3})),)),),
        scorer=FunctionScorer(lambda relevance, vocab, items: (Fraction(0), Fraction(1)), Fraction(1)),
        budget=OnlineBudget(K=2),
    )
    return interface if router is None else attrs.evolve(interface, router=router)


def test_zero_ledgers_are_exact_zeros_in_policy_order():
    assert zero_ledgers(_interface()) == (Fraction(0), Fraction(0))
    assert InterfaceState.initial(_interface()).ledgers == zero_ledgers(_interface())


def test_plan_slot_names_a_ledger_vector_of_the_wrong_length():
    interface = _interface()
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    with pytest.raises(InputError) as error:
        plan_slot(interface, (Fraction(0),), prefix, "g", STORE)
    assert str(error.value) == "ledgers: expected 2 values, one per attribute in policy order, found 1"


def test_plan_slot_routes_on_the_history_and_the_released_views():
    interface = _interface(_PrefixRouter())
    query = interface.query("q")
    ledgers = zero_ledgers(interface)
    record = TurnRecord("q", (("g", "g.v1"),), None, "", (True,), (("g", frozenset({"a", "b"}), Fraction(1, 2)),))
    fresh = plan_slot(interface, ledgers, PublicPrefix((), query, ()), "g", STORE)
    after_history = plan_slot(interface, ledgers, PublicPrefix((record,), query, ()), "g", STORE)
    after_release = plan_slot(interface, ledgers, PublicPrefix((), query, (("h", "h.v1"),)), "g", STORE)
    assert fresh.read.positions == frozenset({1, 3}) and fresh.charge_set == frozenset({"a", "b"})
    assert after_history.read.positions == frozenset({1}) and after_history.charge_set == frozenset({"a"})
    assert after_release.read.positions == frozenset({1, 2}) and after_release.charge_set == frozenset({"a", "b"})


def test_rebase_moves_the_cursor_to_the_scale_of_the_new_ledgers():
    interface = _interface()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", STORE)
    sevenths = (Fraction(1, 7), Fraction(3, 7))
    rebased = cursor.rebase(sevenths)
    assert rebased.ledgers == sevenths and rebased.scale % 7 == 0
    assert rebased.plan().ledgers_after == (Fraction(1, 7) + Fraction(1, 2), Fraction(3, 7) + Fraction(1, 2))
    back = rebased.rebase(zero_ledgers(interface))
    assert back.ledgers == zero_ledgers(interface) and back.scale == cursor.scale


def test_a_ledger_vector_widens_exactly():
    from dpmem_ref.core.ledgers import LedgerVector

    assert LedgerVector((1, 0, 5), 3).widened((Fraction(1, 4),)) == ((4, 0, 20), 12)
    assert LedgerVector((1, 0, 5), 3).widened((Fraction(1, 4),)).scale == 12
    assert LedgerVector((3**40,), 7).widened((Fraction(2, 3),)) == ((3**41,), 21)  # past a float's 53 bits
    same = LedgerVector((1, 2), 6)
    assert same.widened((Fraction(1, 3), Fraction(1, 2))) is same  # the scale already holds them
    assert LedgerVector.of((Fraction(1, 2), Fraction(2, 3)), 4) == ((6, 8), 12)
    assert LedgerVector.of((Fraction(1, 2), Fraction(2, 3)), 4).scale == 12


def test_slot_plans_compare_and_hash_on_their_values_whatever_the_scale_of_their_counts():
    from dpmem_ref.core.ledgers import LedgerVector

    interface = _interface()
    prefix = PublicPrefix((), interface.query("q"), ())
    plan = plan_slot(interface, zero_ledgers(interface), prefix, "g", STORE)
    again = plan_slot(interface, zero_ledgers(interface), prefix, "g", STORE)
    units, scale = plan.vector_after
    rescaled = plan._replace(vector_after=LedgerVector(tuple(2 * u for u in units), 2 * scale))
    assert rescaled.vector_after == plan.vector_after and not (rescaled.vector_after != plan.vector_after)
    assert hash(rescaled.vector_after) == hash(plan.vector_after)
    assert LedgerVector((1, 2), 3) != LedgerVector((1, 3), 3) and LedgerVector((2, 4), 6) == LedgerVector((1, 2), 3)
    assert LedgerVector((2, 4), 6) != LedgerVector((1, 2), 4) and LedgerVector((1,), 3) != LedgerVector((1, 0), 3)
    for same in (again, rescaled):
        assert same is not plan and same == plan and not (same != plan) and hash(same) == hash(plan)
    later = plan_slot(interface, plan.ledgers_after, prefix, "g", STORE)
    assert later != plan and not (later == plan)
    # Distinct plans hash apart (tuples of public values: a collision has probability ~2**-64).
    assert hash(later) != hash(plan)


class _QueryAndHistoryControl:
    """c_t = (query name, turns so far): public inputs only (C6)."""

    name = "query-and-history"
    violates = None
    reads_private = False
    reads_views = False
    reads_history = True

    def observe(self, context, private):
        return (context.query.name, len(context.history))


def test_cursor_control_sees_the_query_and_history_once_every_slot_released():
    interface = attrs.evolve(_interface(), control=_QueryAndHistoryControl())
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", STORE)
    with pytest.raises(InputError) as error:
        cursor.control()
    assert str(error.value) == "cursor: expected a turn whose every slot has released, found '0 released'"
    with pytest.raises(InputError) as error:
        cursor.finish()
    assert str(error.value) == "cursor: expected a turn whose every slot has released, found '0 released'"
    with pytest.raises(InputError) as error:
        cursor.release("h.v1")
    assert str(error.value) == "slot g: expected a view of ['g.gen', 'g.v1'], found 'h.v1'"
    done = cursor.release("g.v1")
    assert done.control() == ("q", 0)
    state, _ = done.finish()
    assert begin_turn(interface, state, "q", STORE).release("g.gen").control() == ("q", 1)


def test_a_cursor_prints_its_public_position_only():
    interface = _interface()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", STORE)
    assert repr(cursor) == "TurnCursor(query='q', turn=0, slots=['g'], released=[])"
    assert repr(cursor.release("g.v1")) == "TurnCursor(query='q', turn=0, slots=['g'], released=[('g', 'g.v1')])"


def test_a_point_mass_batch_repeats_its_view_and_draws_nothing():
    from dpmem_ref import PointMass

    source = TapeSource([])
    assert PointMass(views=("g.gen", "g.v1"), view="g.v1").sample_many(3, source) == ("g.v1",) * 3
    assert PointMass(views=("g.gen",), view="g.gen").sample_many(0, source) == () and source.consumed == 0


def test_a_finished_state_keeps_the_planners_wider_scale():
    interface = _interface()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", STORE).rebase((Fraction(1, 7), Fraction(0)))
    # A durable store committed zero ledgers: the cursor keeps its (wider) scale of sevenths.
    done = cursor.release("g.v1", ledgers=zero_ledgers(interface))
    assert done.scale == cursor.scale and done.scale != interface.ledger_scale
    state, _ = done.finish()
    assert state.ledgers == zero_ledgers(interface)
    assert tuple(state.vector(interface.ledger_scale)) == ((0, 0), done.scale)
    assert begin_turn(interface, state, "q", STORE).scale == done.scale


def test_plans_that_fall_back_are_not_admitted_and_name_false():
    from dpmem_ref import PrivateHooks

    interface = _interface()
    prefix = PublicPrefix((), interface.query("q"), ())
    # L_a = 1 = B_a: the cap rule refuses eps = 1/2; nothing is scored.
    capped = plan_slot(interface, (Fraction(1), Fraction(0)), prefix, "g", STORE)
    assert capped.admitted is False and capped.scores is None
    assert capped.distribution.support() == ("g.gen",) and capped.ledgers_after == (Fraction(1), Fraction(0))
    # A score-reading fallback hook (a C4 breach, strict=False): scored, then not admitted.
    hooked = attrs.evolve(interface, hooks=PrivateHooks(fallback=lambda scores: True))
    fallen = plan_slot(hooked, zero_ledgers(interface), prefix, "g", STORE, strict=False)
    assert fallen.admitted is False and fallen.scores == (Fraction(0), Fraction(1))
    assert fallen.distribution.support() == ("g.gen",) and fallen.ledgers_after == zero_ledgers(interface)


def test_cursor_plans_route_on_views_released_earlier_in_the_turn():
    base = _interface(_PrefixRouter())
    two_slots = Query("q2", "q2", (SlotRead("h", frozenset({4})), SlotRead("g", frozenset({1, 3}))))
    interface = attrs.evolve(base, queries=base.queries + (two_slots,))
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q2", STORE)
    assert cursor.slots == ("h", "g") and cursor.plan().read.positions == frozenset({4})
    after_h = cursor.release("h.v1")
    assert after_h.slot == "g" and after_h.plan().read.positions == frozenset({1, 2})  # narrowed by the release
    done = after_h.release("g.gen")
    for read_past_the_end in (lambda: done.plan(), lambda: done.slot):
        with pytest.raises(InputError) as error:
            read_past_the_end()
        assert str(error.value) == "cursor: expected a turn with a slot left to plan, found 'every slot released'"


def test_begin_turn_accepts_a_store_over_an_equal_layout():
    interface = _interface()
    copy = Store.from_mapping(Layout(("g", "g", "g", "h")), {1: MemoryItem(frozenset({"x"}), "x")}, "copy")
    assert copy.layout is not interface.policy.layout
    assert begin_turn(interface, InterfaceState.initial(interface), "q", copy).slots == ("g",)


class _RecordingRouter:
    """Declares it reads neither history nor released views: G_t is asked for with an empty
    history, each read with an empty prefix (both memoized on the query: they depend on it alone)."""

    name = "recording"
    violates = None
    reads_history = False
    reads_released_views = False

    def __init__(self):
        self.histories = []
        self.prefixes = []

    def active_slots(self, query, history):
        self.histories.append(history)
        return tuple(read.slot for read in query.reads)

    def read(self, prefix, slot):
        self.prefixes.append((prefix.history, prefix.released, slot))
        return prefix.query.read_for(slot)

    def state_key(self, history):
        return ()


def test_a_router_that_reads_no_history_is_asked_with_an_empty_one():
    router = _RecordingRouter()
    interface = _interface(router)
    state = InterfaceState.initial(interface)
    for _ in range(2):
        cursor = begin_turn(interface, state, "q", STORE)
        state, _ = cursor.release("g.gen").finish()
    assert len(state.history) == 2 and router.histories == [()]  # asked once: G_t is memoized on q_t
    assert router.prefixes == [((), (), "g")]  # the read too, though turn 2 has a history
    # Two slots in one turn: each (query, slot) has its own memoized read.
    two_slots = Query("q2", "q2", (SlotRead("h", frozenset({4})), SlotRead("g", frozenset({1, 3}))))
    interface = attrs.evolve(interface, queries=interface.queries + (two_slots,))
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q2", STORE)
    plan_h = cursor.plan()
    plan_g = cursor.release("h.gen").plan()
    assert (plan_h.slot, plan_h.read.positions, plan_g.slot, plan_g.read.positions) == ("h", {4}, "g", {1, 3})
    assert plan_g.vocabulary.slot == "g" and plan_g.charge_set == frozenset({"a", "b"})


def test_a_slot_is_scored_once_per_read_and_store_object():
    calls = []

    def score(relevance, vocabulary, items):
        calls.append(items)
        return (Fraction(0), Fraction(1))

    interface = attrs.evolve(_interface(), scorer=FunctionScorer(score, Fraction(1)))
    prefix = PublicPrefix((), interface.query("q"), ())
    other = STORE.replace({1: MemoryItem(frozenset({"v"}), "v")}, name="M'")
    plans = [plan_slot(interface, zero_ledgers(interface), prefix, "g", store) for store in (STORE, STORE, other, STORE)]
    assert [plan.scores for plan in plans] == [(Fraction(0), Fraction(1))] * 4
    assert [item.tags for items in calls for item in items] == [{"x"}, {"z"}, {"v"}, {"z"}]  # M, then M' (memo kept M)


def test_a_turn_frame_is_strict_by_default():
    from dpmem_ref import ContractViolation
    from dpmem_ref.core.ledgers import LedgerVector
    from dpmem_ref.turn.plan import TurnFrame, plan_units

    base = _interface()
    under = Query("under", "under", (SlotRead("g", frozenset({2}), charge=frozenset({"a"})),))
    interface = attrs.evolve(base, queries=base.queries + (under,))
    with pytest.raises(ContractViolation) as error:
        plan_units(TurnFrame(interface, STORE, under, (), 0, ("g",)), LedgerVector((0, 0), interface.ledger_scale), (), "g")
    assert error.value.code == "C2.uncharged_read"


def test_begin_turn_refuses_a_state_with_the_wrong_number_of_ledgers() -> None:
    """One ledger per attribute, in policy order: a state from another interface is refused
    with the kernel's own error before any plan (not a bare zip ValueError)."""
    from fractions import Fraction

    import pytest

    from dpmem_ref import InterfaceState, begin_turn
    from dpmem_ref.core.errors import InputError
    from tests.kernel_fixtures import two_attribute_interface

    interface, store, _ = two_attribute_interface()
    wrong = InterfaceState(turn=0, ledgers=(Fraction(0),), history=())
    with pytest.raises(InputError) as error:
        begin_turn(interface, wrong, interface.queries[0], store)
    assert str(error.value) == "state.ledgers: expected 2 values, one per attribute in policy order, found 1"


# ---------------------------------------------------------------------------------------
# turn.plan.plan_units: an eps off the catalogue's ledger scale, eps = 0, and the
# admission call of a cap rule that does not declare the prospective form


class _OffCatalogueRouter(_PrefixRouter):
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

    interface = attrs.evolve(_interface(), budget=PreallocatedBudget.from_mapping({"a": 2, "b": 3}), **parts)
    return interface if router is None else attrs.evolve(interface, router=router)


def test_an_eps_off_the_ledger_scale_is_charged_exactly_on_a_wider_scale():
    from dpmem_ref import run_turn
    from dpmem_ref.mechanism.randomness import SeededRandomSource

    interface = _preallocated_interface(_OffCatalogueRouter())
    assert interface.ledger_scale == 2
    query = interface.query("q")
    record = TurnRecord("q", (("g", "g.v1"),), None, "", (True,), (("g", frozenset({"a", "b"}), Fraction(1, 2)),))
    plan = plan_slot(interface, zero_ledgers(interface), PublicPrefix((record,), query, ()), "g", STORE)
    assert (plan.charge_set, plan.epsilon, plan.admitted) == (frozenset({"b"}), Fraction(2, 3), True)
    assert plan.ledgers_after == (Fraction(0), Fraction(2, 3))
    assert all(type(value) is Fraction for value in plan.ledgers_after)
    late = plan_slot(interface, (Fraction(1, 2), Fraction(3, 2)), PublicPrefix((record,), query, ()), "g", STORE)
    assert not late.admitted and late.ledgers_after == (Fraction(1, 2), Fraction(3, 2))  # 3/2 + 2/3 > 2
    # A whole run: {a, b} at 1/2 once, then b alone at 2/3 until its cap is reached exactly.
    state = InterfaceState.initial(interface)
    ledgers = []
    for turn in range(5):
        state = run_turn(interface, state, "q", STORE, SeededRandomSource(turn)).state
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

    interface = attrs.evolve(_interface(), budget=_ConstantBudget(epsilon))
    prefix = PublicPrefix((), interface.query("q"), ())
    with pytest.raises(ContractViolation) as error:
        plan_slot(interface, zero_ledgers(interface), prefix, "g", STORE)
    assert error.value.code == "C3.invalid_epsilon"
    assert str(error.value).endswith(f"slot g: epsilon must be a positive exact rational, found {epsilon}")


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
    admitted = plan_slot(interface, (Fraction(1, 4), Fraction(1)), prefix, "g", STORE)
    refused = plan_slot(interface, (Fraction(3, 4), Fraction(1)), prefix, "g", STORE)
    assert admitted.admitted and not refused.admitted
    caps = {"a": Fraction(1), "b": Fraction(2)}
    both = frozenset({"a", "b"})
    assert rule.calls == [
        ({"a": Fraction(1, 4), "b": Fraction(1)}, caps, both, Fraction(1, 2)),
        ({"a": Fraction(3, 4), "b": Fraction(1)}, caps, both, Fraction(1, 2)),
    ]


def test_rebase_refuses_ledgers_of_the_wrong_length():
    """A durable store's committed ledgers re-enter the cursor through rebase: one per
    attribute, checked there like in begin_turn (not truncated by a zip later)."""
    interface = _interface()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", STORE)
    for wrong in ((Fraction(0),), (Fraction(0),) * 3):
        with pytest.raises(InputError) as error:
            cursor.rebase(wrong)
        assert str(error.value) == f"ledgers: expected 2 values, one per attribute in policy order, found {len(wrong)}"
