"""The turn planner (begin_turn -> TurnCursor): one loop, immutable and forkable; exact
integer ledgers; violations carry stable codes."""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest

from dpmem_ref import (
    VIOLATION_CODES,
    ContractViolation,
    InputError,
    InterfaceState,
    Layout,
    MemoryItem,
    NoCap,
    PublicPrefix,
    Query,
    RecordingSource,
    SeededRandomSource,
    SlotRead,
    Store,
    TapeSource,
    begin_turn,
    plan_slot,
    run_turn,
)
from dpmem_ref.contract import contract_violations
from dpmem_ref.core.errors import PART_LEVEL_CODES, Violation, split_code
from dpmem_ref.turn.plan import zero_ledgers
from tests.kernel_fixtures import (
    XYZW_STORE,
    PrefixNarrowingRouter,
    figure2,
    interface_reading_1_3,
    two_attribute_interface,
)


def test_cursor_release_charges_before_release_and_finish_matches_run_turn() -> None:
    loaded = figure2()
    interface, store = loaded.interface, loaded.store("M")
    state = InterfaceState.initial(interface)
    recording = RecordingSource(SeededRandomSource(3))
    expected = run_turn(interface, state, "affordable-dinner", store, recording)
    cursor = begin_turn(interface, state, "affordable-dinner", store)
    tape = TapeSource([value for _, value in recording.tape])
    while not cursor.done:
        plan = cursor.plan()
        released = cursor.release(plan.distribution.sample(tape))
        assert released.ledgers == plan.ledgers_after  # charged in the plan, before release
        cursor = released
    new_state, record = cursor.finish()
    assert (new_state, record) == (expected.state, expected.record)
    assert cursor.plans == expected.plans


def test_cursor_is_immutable_and_forks_share_nothing_but_the_plan() -> None:
    interface, store, _ = two_attribute_interface()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", store)
    plan = cursor.plan()
    assert cursor.plan() is plan
    forks = [cursor.release(view) for view in plan.vocabulary.names]
    assert [f.released for f in forks] == [(("s", "v0"),), (("s", "v1"),)]
    assert cursor.released == () and not cursor.done
    assert all(f.ledgers == (Fraction(2, 3), Fraction(2, 3)) for f in forks)
    assert forks[0].control() != forks[1].control() or forks[0].control() == ((("s", "released"),))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        cursor.released = ()  # type: ignore[misc]
    with pytest.raises(InputError):
        cursor.release("not-a-view")
    with pytest.raises(InputError):
        forks[0].plan()


def test_integer_ledgers_are_exact_two_thirds_three_times_is_two() -> None:
    interface, store, _ = two_attribute_interface()
    state = InterfaceState.initial(interface)
    for _ in range(3):
        state = run_turn(interface, state, "q", store, SeededRandomSource(0)).state
    assert state.ledgers == (Fraction(2), Fraction(2))
    assert state.ledger_map(interface) == {"a": Fraction(2), "b": Fraction(2)}
    fourth = run_turn(interface, state, "q", store, SeededRandomSource(0))
    assert fourth.record.admitted == (False,) and fourth.state.ledgers == (Fraction(2), Fraction(2))


def test_ledgers_off_the_catalogue_scale_widen_exactly() -> None:
    interface, store, _ = two_attribute_interface()
    odd = (Fraction(1, 7), Fraction(0))
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    plan = plan_slot(interface, odd, prefix, "s", store)
    assert plan.ledgers_after == (Fraction(1, 7) + Fraction(2, 3), Fraction(2, 3))
    cursor = begin_turn(interface, InterfaceState(turn=0, ledgers=odd, history=()), "q", store)
    assert cursor.release("v0").ledgers == plan.ledgers_after
    assert cursor.rebase((Fraction(13, 7), Fraction(0))).plan().admitted is False


def test_violations_carry_registered_codes() -> None:
    interface, store, _ = two_attribute_interface(charge=frozenset({"a"}), cap_rule=NoCap())
    codes = [v.code for v in contract_violations(interface)]
    assert codes == ["C5.cap_rule", "C2.charge_omits_attribute"]
    assert all(code in VIOLATION_CODES for code in codes)
    assert [v.part_level for v in contract_violations(interface)] == [True, False]
    with pytest.raises(ContractViolation) as refused:
        run_turn(interface, InterfaceState.initial(interface), "q", store, SeededRandomSource(0))
    assert refused.value.code == "C5.cap_rule" and refused.value.condition == "C5"
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    with pytest.raises(ContractViolation) as uncharged:  # the run-time check at the plan
        plan_slot(interface, (Fraction(0), Fraction(0)), prefix, "s", store)
    assert uncharged.value.code == "C2.uncharged_read"


def test_violation_code_registry() -> None:
    assert PART_LEVEL_CODES <= set(VIOLATION_CODES)
    for code in VIOLATION_CODES:
        condition, kind = split_code(code)
        assert Violation.of(code, "m").code == code and kind
    assert ContractViolation("C3", "bare condition").code == "C3"
    with pytest.raises(ValueError):
        ContractViolation("C2.no_such_kind", "m")


def test_rebase_moves_the_cursor_to_the_scale_of_the_new_ledgers():
    interface = interface_reading_1_3()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE)
    sevenths = (Fraction(1, 7), Fraction(3, 7))
    rebased = cursor.rebase(sevenths)
    assert rebased.ledgers == sevenths and rebased.scale % 7 == 0
    assert rebased.plan().ledgers_after == (Fraction(1, 7) + Fraction(1, 2), Fraction(3, 7) + Fraction(1, 2))
    back = rebased.rebase(zero_ledgers(interface))
    assert back.ledgers == zero_ledgers(interface) and back.scale == cursor.scale


def test_rebase_refuses_ledgers_of_the_wrong_length():
    """A durable store's committed ledgers re-enter the cursor through rebase: one per
    attribute, checked there like in begin_turn (not truncated by a zip later)."""
    interface = interface_reading_1_3()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE)
    for wrong in ((Fraction(0),), (Fraction(0),) * 3):
        with pytest.raises(InputError) as error:
            cursor.rebase(wrong)
        assert str(error.value) == f"ledgers: expected 2 values, one per attribute in policy order, found {len(wrong)}"


def test_a_finished_state_keeps_the_planners_wider_scale():
    interface = interface_reading_1_3()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE).rebase((Fraction(1, 7), Fraction(0)))
    # A durable store committed zero ledgers: the cursor keeps its (wider) scale of sevenths.
    done = cursor.release("g.v1", ledgers=zero_ledgers(interface))
    assert done.scale == cursor.scale and done.scale != interface.ledger_scale
    state, _ = done.finish()
    assert state.ledgers == zero_ledgers(interface)
    assert tuple(state.vector(interface.ledger_scale)) == ((0, 0), done.scale)
    assert begin_turn(interface, state, "q", XYZW_STORE).scale == done.scale


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
    interface = attrs.evolve(interface_reading_1_3(), control=_QueryAndHistoryControl())
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE)
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
    assert begin_turn(interface, state, "q", XYZW_STORE).release("g.gen").control() == ("q", 1)


def test_a_cursor_prints_its_public_position_only():
    interface = interface_reading_1_3()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE)
    assert repr(cursor) == "TurnCursor(query='q', turn=0, slots=['g'], released=[])"
    assert repr(cursor.release("g.v1")) == "TurnCursor(query='q', turn=0, slots=['g'], released=[('g', 'g.v1')])"


def test_cursor_plans_route_on_views_released_earlier_in_the_turn():
    base = interface_reading_1_3(PrefixNarrowingRouter())
    two_slots = Query("q2", "q2", (SlotRead("h", frozenset({4})), SlotRead("g", frozenset({1, 3}))))
    interface = attrs.evolve(base, queries=base.queries + (two_slots,))
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q2", XYZW_STORE)
    assert cursor.slots == ("h", "g") and cursor.plan().read.positions == frozenset({4})
    after_h = cursor.release("h.v1")
    assert after_h.slot == "g" and after_h.plan().read.positions == frozenset({1, 2})  # narrowed by the release
    done = after_h.release("g.gen")
    for read_past_the_end in (lambda: done.plan(), lambda: done.slot):
        with pytest.raises(InputError) as error:
            read_past_the_end()
        assert str(error.value) == "cursor: expected a turn with a slot left to plan, found 'every slot released'"


def test_begin_turn_accepts_a_store_over_an_equal_layout():
    interface = interface_reading_1_3()
    copy = Store.from_mapping(Layout(("g", "g", "g", "h")), {1: MemoryItem(frozenset({"x"}), "x")}, "copy")
    assert copy.layout is not interface.policy.layout
    assert begin_turn(interface, InterfaceState.initial(interface), "q", copy).slots == ("g",)


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
    interface = interface_reading_1_3(router)
    state = InterfaceState.initial(interface)
    for _ in range(2):
        cursor = begin_turn(interface, state, "q", XYZW_STORE)
        state, _ = cursor.release("g.gen").finish()
    assert len(state.history) == 2 and router.histories == [()]  # asked once: G_t is memoized on q_t
    assert router.prefixes == [((), (), "g")]  # the read too, though turn 2 has a history
    # Two slots in one turn: each (query, slot) has its own memoized read.
    two_slots = Query("q2", "q2", (SlotRead("h", frozenset({4})), SlotRead("g", frozenset({1, 3}))))
    interface = attrs.evolve(interface, queries=interface.queries + (two_slots,))
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q2", XYZW_STORE)
    plan_h = cursor.plan()
    plan_g = cursor.release("h.gen").plan()
    assert (plan_h.slot, plan_h.read.positions, plan_g.slot, plan_g.read.positions) == ("h", {4}, "g", {1, 3})
    assert plan_g.vocabulary.slot == "g" and plan_g.charge_set == frozenset({"a", "b"})


def test_a_lenient_cursor_rebases_onto_ledgers_past_a_cap_that_a_strict_one_refuses():
    """A lenient run (a broken cap rule, audited) may commit ledgers past B_a; rebase keeps
    the cursor's strictness: strict refuses them at the boundary, lenient plans on them."""
    interface = interface_reading_1_3()
    past_cap = (Fraction(3, 2), Fraction(0))  # B_a = 1
    strict = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE)
    with pytest.raises(InputError) as error:
        strict.rebase(past_cap)
    assert str(error.value) == "ledgers[0]: expected a ledger in [0, B_a] = [0, 1], found '3/2'"
    lenient = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE, strict=False)
    rebased = lenient.rebase(past_cap)
    assert rebased.ledgers == past_cap
    assert rebased.plan().admitted is False and rebased.plan().ledgers_after == past_cap


class _CountingRouter(PrefixNarrowingRouter):
    """Reads the history and the released views (so nothing is memoized): counts its reads."""

    def __init__(self):
        self.reads = []

    def read(self, prefix, slot):
        self.reads.append(slot)
        return super().read(prefix, slot)


def test_release_sampled_continues_from_the_plan_the_cursor_already_made():
    """A cursor's plan() is made once: sampling the turn from it releases from that very plan
    and never plans its slot again."""
    router = _CountingRouter()
    interface = interface_reading_1_3(router)
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE)
    plan = cursor.plan()
    done = cursor.release_sampled(SeededRandomSource(0))
    assert done.plans[0] is plan and router.reads == ["g"]
    assert done.done and done.released[0][1] in plan.distribution.support()


def test_a_lenient_turn_starts_from_and_commits_ledgers_past_a_cap_that_a_strict_one_refuses():
    """Lenient runs (broken cap rules, audited) may carry ledgers past B_a: begin_turn takes a
    state holding them and release(view, ledgers=...) takes them from a durable store; a
    strict turn refuses both, naming the ledger. Neither takes a negative ledger."""
    interface = interface_reading_1_3()
    past_cap = (Fraction(3, 2), Fraction(0))  # B_a = 1
    state = InterfaceState(turn=0, ledgers=past_cap, history=())
    with pytest.raises(InputError) as error:
        begin_turn(interface, state, "q", XYZW_STORE)
    assert str(error.value) == "state.ledgers[0]: expected a ledger in [0, B_a] = [0, 1], found '3/2'"
    lenient = begin_turn(interface, state, "q", XYZW_STORE, strict=False)
    assert lenient.ledgers == past_cap and lenient.plan().admitted is False
    fresh = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE, strict=False)
    assert fresh.release("g.v1", ledgers=past_cap).ledgers == past_cap
    strict = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE)
    with pytest.raises(InputError) as error:
        strict.release("g.v1", ledgers=past_cap)
    assert str(error.value) == "ledgers[0]: expected a ledger in [0, B_a] = [0, 1], found '3/2'"
    with pytest.raises(InputError) as error:
        fresh.release("g.v1", ledgers=(Fraction(-1, 2), Fraction(0)))
    assert str(error.value) == "ledgers[0]: expected a non-negative ledger, found '-1/2'"
