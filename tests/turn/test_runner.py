"""Running turns (dpmem_ref.turn.runner): `run_turn` and `run_interaction` charge, fall back
and record; strict by default; routing (a public router, a private routing hook), the
control's inputs, and the store checked against the interface's layout.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import (
    ContractViolation,
    InputError,
    InterfaceState,
    Layout,
    Query,
    SeededRandomSource,
    SlotRead,
    Store,
    TemplateChannel,
    run_interaction,
)
from tests.kernel_fixtures import (
    interface_reading_1,
    item,
    make_store,
)


def test_run_interaction_charges_then_falls_back():
    interface = interface_reading_1()
    state = run_interaction(interface, ["q", "q", "q"], make_store(), SeededRandomSource(0))
    assert state.turn == 3 and len(state.history) == 3
    assert state.ledger_map(interface) == {"a": Fraction(1), "b": Fraction(0)}
    assert [record.admitted for record in state.history] == [(True,), (True,), (False,)]
    assert state.history[2].views == (("g", "g.gen"),)
    assert run_interaction(interface, [], make_store(), SeededRandomSource(0)) == InterfaceState.initial(interface)


def test_a_fallback_records_no_charge():
    interface = interface_reading_1()
    state = run_interaction(interface, ["q", "q", "q"], make_store(), SeededRandomSource(0))
    assert [record.charges for record in state.history] == [
        (("g", frozenset({"a"}), Fraction(1, 2)),),
        (("g", frozenset({"a"}), Fraction(1, 2)),),
        (("g", frozenset(), Fraction(0)),),
    ]


def test_run_interaction_is_strict_by_default_and_calls_the_channel():
    broken = interface_reading_1(under_charged=True)
    with pytest.raises(ContractViolation) as error:
        run_interaction(broken, ["q"], make_store(), SeededRandomSource(0))
    assert error.value.condition == "C2"
    relaxed = run_interaction(broken, ["q"], make_store(), SeededRandomSource(0), strict=False)
    assert relaxed.turn == 1
    interface = interface_reading_1()
    state = run_interaction(interface, ["q"], make_store(), SeededRandomSource(0), channel=TemplateChannel())
    assert state.history[0].response.startswith("Answer to 'q' following [g: ")
    assert run_interaction(interface, ["q"], make_store(), SeededRandomSource(0)).history[0].response == ""


def test_relaxed_run_plans_without_the_contract_checks():
    broken = interface_reading_1(under_charged=True)
    state = run_interaction(broken, ["under"], make_store(), SeededRandomSource(0), strict=False)
    assert state.history[0].charges == (("g", frozenset({"a"}), Fraction(1, 2)),)  # b omitted: the C2 breach


def test_run_turn_refuses_a_store_over_another_layout():
    from dpmem_ref import run_turn

    interface = interface_reading_1()
    other = Store.from_mapping(Layout(("g",)), {}, "tiny")
    with pytest.raises(InputError) as error:
        run_turn(interface, InterfaceState.initial(interface), "q", other, SeededRandomSource(0))
    assert str(error.value) == "store: expected a store over the interface's layout, found 'tiny'"
    with pytest.raises(InputError) as error:
        run_turn(interface, InterfaceState.initial(interface), "q", Store.from_mapping(Layout(("g",)), {}),
                 SeededRandomSource(0))
    assert error.value.found == "another layout"


class _EveryOtherTurnRouter:
    """A public router (C4): slots are active on even turns only, and the read narrows
    to the slot's first position once there is history. Reads the history only."""

    name = "every-other-turn"
    violates = None
    reads_history = True  # declared capabilities (dpmem_ref.parts.protocols.Router)
    reads_released_views = False

    def active_slots(self, query, history):
        return tuple(read.slot for read in query.reads) if len(history) % 2 == 0 else ()

    def read(self, prefix, slot):
        read = prefix.query.read_for(slot)
        if prefix.history:
            import attrs

            return attrs.evolve(read, positions=frozenset({min(read.positions)}))
        return read

    def state_key(self, history):
        return len(history)


def test_run_turn_routes_and_reads_from_the_history():
    import attrs

    interface = attrs.evolve(interface_reading_1(), router=_EveryOtherTurnRouter(),
                             queries=(Query("q", "q", (SlotRead("g", frozenset({1, 3})),)),))
    state = run_interaction(interface, ["q", "q", "q"], make_store(), SeededRandomSource(0))
    assert [record.views != () for record in state.history] == [True, False, True]
    # Turn 1 reads {1, 3} (charged to a and b); turn 3 reads {1} (charged to a only).
    assert [charges for record in state.history for charges in record.charges] == [
        ("g", frozenset({"a", "b"}), Fraction(1, 2)),
        ("g", frozenset({"a"}), Fraction(1, 2)),
    ]
    assert state.ledger_map(interface) == {"a": Fraction(1), "b": Fraction(1, 2)}


def test_run_turn_hands_the_store_to_a_routing_hook():
    """A memory-dependent routing hook (a C4 breach, run with strict=False) sees the store."""
    import attrs

    from dpmem_ref import PrivateHooks, run_turn

    def routing(query, history, memory):
        return ("g",) if "x" in memory.items[0].tags else ()

    interface = attrs.evolve(interface_reading_1(), hooks=PrivateHooks(routing=routing))
    state = InterfaceState.initial(interface)
    with_x = run_turn(interface, state, "q", make_store(), SeededRandomSource(0), strict=False)
    without = run_turn(interface, state, "q", make_store(p1=item("v")), SeededRandomSource(0), strict=False)
    assert len(with_x.record.views) == 1 and without.record.views == ()


def test_routing_hook_sees_query_and_history():
    import attrs

    from dpmem_ref import PrivateHooks

    def routing(query, history, memory):
        return ("g",) if query.name == "q" and len(history) == 0 else ()

    interface = attrs.evolve(interface_reading_1(), hooks=PrivateHooks(routing=routing))
    state = run_interaction(interface, ["q", "q"], make_store(), SeededRandomSource(0), strict=False)
    assert [len(record.views) for record in state.history] == [1, 0]


class _QueryAndTurnControl:
    """c_t = (query name, turns so far, ledgers): public inputs and ledger state only (C6)."""

    name = "query-and-turn"
    violates = None
    reads_private = False
    reads_views = False

    def observe(self, context, private):
        return (context.query.name, len(context.history), context.ledgers)


def test_run_turn_gives_the_control_the_query_history_and_ledgers():
    import attrs

    interface = attrs.evolve(interface_reading_1(), control=_QueryAndTurnControl())
    state = run_interaction(interface, ["q", "q"], make_store(), SeededRandomSource(0))
    assert [record.control for record in state.history] == [
        ("q", 0, (("a", Fraction(1, 2)), ("b", Fraction(0)))),
        ("q", 1, (("a", Fraction(1)), ("b", Fraction(0)))),
    ]


def test_controls_get_private_data_only_when_they_declare_it():
    import attrs

    from dpmem_ref import PrivateHooks, TopScoreControl, run_turn

    class _SeesPrivate:
        name = "sees-private"
        violates = None
        reads_private = False
        reads_views = False

        def observe(self, context, private):
            return private is None

    public = attrs.evolve(interface_reading_1(), control=_SeesPrivate())
    assert run_interaction(public, ["q"], make_store(), SeededRandomSource(0)).history[0].control is True
    leaky = attrs.evolve(interface_reading_1(), control=TopScoreControl())
    assert run_interaction(leaky, ["q"], make_store(), SeededRandomSource(0), strict=False).history[0].control == (
        Fraction(1),
    )
    # A state whose ledger vector does not match the attributes is refused even when no slot runs.
    idle = attrs.evolve(interface_reading_1(), hooks=PrivateHooks(routing=lambda query, history, memory: ()))
    with pytest.raises(ValueError):
        run_turn(idle, InterfaceState(turn=0, ledgers=(Fraction(0),), history=()), "q", make_store(),
                 SeededRandomSource(0), strict=False)


def test_run_interaction_refuses_a_channel_without_respond_before_any_turn():
    interface = interface_reading_1()
    with pytest.raises(InputError) as error:
        run_interaction(interface, ["q"], make_store(), SeededRandomSource(0), channel=object())
    assert str(error.value) == (
        "channel: expected None or an LLMChannel (respond(query, views, prefix) -> str), found 'object'"
    )


class _ElsewhereSelector:
    """A selector whose release law puts all its mass on a view outside the slot's vocabulary."""

    name = "elsewhere"
    violates = None

    def distribution(self, views, scores, epsilon, sensitivity):
        from dpmem_ref.mechanism.em import PointMass

        return PointMass(views=views, view="g.elsewhere")


def test_a_strict_turn_refuses_a_sampled_view_outside_the_vocabulary_that_a_lenient_one_releases():
    import attrs

    from dpmem_ref import run_turn
    from tests.kernel_fixtures import XYZW_STORE, interface_reading_1_3

    interface = attrs.evolve(interface_reading_1_3(), selector=_ElsewhereSelector())
    state = InterfaceState.initial(interface)
    with pytest.raises(InputError) as error:
        run_turn(interface, state, "q", XYZW_STORE, SeededRandomSource(0))
    assert str(error.value) == "slot g: expected a view of ['g.gen', 'g.v1'], found 'g.elsewhere'"
    lenient = run_turn(interface, state, "q", XYZW_STORE, SeededRandomSource(0), strict=False)
    assert lenient.record.views == (("g", "g.elsewhere"),)
    assert lenient.state.ledgers == (Fraction(1, 2), Fraction(1, 2))  # charged before the release


def test_run_turn_routes_each_slot_on_the_views_released_earlier_in_the_turn():
    """C4: the read of slot g follows the public prefix, which includes h's release this turn."""
    import attrs

    from dpmem_ref import run_turn
    from tests.kernel_fixtures import XYZW_STORE, PrefixNarrowingRouter, interface_reading_1_3

    base = interface_reading_1_3(PrefixNarrowingRouter())
    two_slots = Query("q2", "q2", (SlotRead("h", frozenset({4})), SlotRead("g", frozenset({1, 3}))))
    interface = attrs.evolve(base, queries=base.queries + (two_slots,))
    result = run_turn(interface, InterfaceState.initial(interface), "q2", XYZW_STORE, SeededRandomSource(0))
    assert [(plan.slot, plan.read.positions) for plan in result.plans] == [("h", {4}), ("g", {1, 2})]
    assert result.plans[1].charge_set == frozenset({"a", "b"})  # {1, 2} touches I_a and I_b


class _CapsControl:
    """c_t = the caps it is given: public and fixed (C6)."""

    name = "caps"
    violates = None
    reads_private = False
    reads_views = False

    def observe(self, context, private):
        return context.caps


class _PeekingControl:
    """A broken control (declares it reads private data): c_t = the read items' texts and the
    vocabularies' slots of the turn's plans."""

    name = "peeking"
    violates = "C6"
    reads_private = True
    reads_views = False

    def observe(self, context, private):
        return (
            tuple(tuple(item.text for item in items) for items in private.items),
            tuple(vocabulary.slot for vocabulary in private.vocabularies),
        )


def test_the_control_sees_the_caps_and_a_private_reader_the_plans_items_and_vocabularies():
    import attrs

    public = attrs.evolve(interface_reading_1(), control=_CapsControl())
    record = run_interaction(public, ["q"], make_store(), SeededRandomSource(0)).history[0]
    assert record.control == (("a", Fraction(1)), ("b", Fraction(2)))
    assert record.query == "q"  # the turn record names the query
    peeking = attrs.evolve(interface_reading_1(), control=_PeekingControl())
    state = run_interaction(peeking, ["q"], make_store(), SeededRandomSource(0), strict=False)
    assert state.history[0].control == ((("x",),), ("g",))
