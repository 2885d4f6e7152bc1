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
    NoCap,
    PublicPrefix,
    RecordingSource,
    SeededRandomSource,
    TapeSource,
    begin_turn,
    decimal_text,
    fraction_text,
    plan_slot,
    run_turn,
)
from dpmem_ref.contract import contract_violations
from dpmem_ref.core.errors import PART_LEVEL_CODES, Violation, split_code
from tests.kernel_fixtures import figure2, two_attribute_interface


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


def test_one_fraction_formatter() -> None:
    assert fraction_text(Fraction(4, 2)) == "2" and fraction_text(Fraction(4, 3)) == "4/3"
    assert decimal_text(Fraction(4, 3)) == "1.333333"
    assert decimal_text(Fraction(4, 3), 2, "up") == "1.34" and decimal_text(Fraction(-4, 3), 2, "up") == "-1.33"
    assert decimal_text(Fraction(1, 3), 3, "down") == "0.333" and decimal_text(Fraction(-1, 10**9), 3) == "0"
