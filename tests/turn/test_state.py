"""The interface state (dpmem_ref.turn.state): one ledger per attribute, in policy order;
the planner's integer view of its ledgers (`vector`), kept exact over any base scale."""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest

from dpmem_ref import (
    InputError,
    InterfaceState,
    begin_turn,
)
from dpmem_ref.core.ledgers import LedgerVector
from tests.kernel_fixtures import (
    XYZW_STORE,
    interface_reading_1,
    interface_reading_1_3,
)


def test_ledger_map_needs_one_ledger_per_attribute():
    interface = interface_reading_1()
    with pytest.raises(ValueError):
        InterfaceState(turn=0, ledgers=(Fraction(0),), history=()).ledger_map(interface)


def test_a_planned_state_gives_its_ledgers_exactly_over_a_base_scale_its_own_does_not_divide():
    """A state the planner built carries ledgers over its own scale (here halves); asked for
    another base scale (thirds) it answers the same ledgers, never its counts re-read over
    the new scale."""
    interface = interface_reading_1_3()  # eps = 1/2
    state, _ = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE).release("g.v1").finish()
    assert state.built_by_planner and state.ledgers == (Fraction(1, 2), Fraction(1, 2))
    vector = state.vector(3)
    assert vector.scale % 3 == 0 and vector.scale % 2 == 0
    assert vector == LedgerVector.of(state.ledgers, 3) and tuple(vector) == ((3, 3), 6)


def test_zero_ledgers_are_zero_counts_over_any_base_scale():
    interface = interface_reading_1_3()
    initial = InterfaceState.initial(interface)
    assert initial.built_by_planner  # the kernel's own state: its ledgers (0 <= 0 <= B_a) need no re-check
    assert tuple(initial.vector(1)) == ((0, 0), 1)
    assert tuple(initial.vector(6)) == ((0, 0), 6)
    unplanned = InterfaceState(turn=0, ledgers=(Fraction(0), Fraction(1, 5)), history=())
    assert not unplanned.built_by_planner and tuple(unplanned.vector(2)) == ((0, 2), 10)


def test_a_state_holds_one_ledger_form_and_gives_fractions_at_the_boundary():
    interface = interface_reading_1_3()
    state, _ = begin_turn(interface, InterfaceState.initial(interface), "q", XYZW_STORE).release("g.v1").finish()
    assert [field.name for field in attrs.fields(InterfaceState)] == ["turn", "_vector", "history", "_planned"]
    assert all(type(value) is Fraction for value in state.ledgers)
    given = InterfaceState(turn=1, ledgers=[Fraction(1, 2), Fraction(2, 4)], history=state.history)
    assert given == state and hash(given) == hash(state) and given.ledgers == state.ledgers
    assert all(type(v) is Fraction for v in InterfaceState(turn=0, ledgers=(0, 1), history=()).ledgers)
    assert repr(given) == f"InterfaceState(turn=1, ledgers={state.ledgers!r}, history={state.history!r})"
    forgetting = attrs.evolve(state, history=())  # the vector travels as it is; trust does not
    assert forgetting.ledgers == state.ledgers and not forgetting.built_by_planner


@pytest.mark.parametrize(
    ("ledgers", "field", "expected"),
    [((Fraction(0), 0.5), "state.ledgers[1]", "an exact rational"), ("0, 1/2", "state.ledgers", "a tuple of exact rationals")],
)
def test_a_state_refuses_inexact_ledgers_when_built(ledgers: object, field: str, expected: str) -> None:
    with pytest.raises(InputError) as error:
        InterfaceState(turn=0, ledgers=ledgers, history=())  # type: ignore[arg-type]
    assert str(error.value).startswith(f"{field}: expected {expected}")
