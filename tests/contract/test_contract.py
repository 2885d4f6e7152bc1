"""Each contract condition C1-C6 trips a named ContractViolation when a part breaks it."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from fractions import Fraction

import pytest

from dpmem_ref import (
    ArgmaxSelector,
    ContractViolation,
    FunctionScorer,
    InterfaceState,
    NoCap,
    PrivateHooks,
    RawEvidenceControl,
    SeededRandomSource,
    TopScoreControl,
    View,
    Vocabulary,
    run_turn,
)
from dpmem_ref.contract import contract_violations
from dpmem_ref.core.transcript import SlotRead
from tests.kernel_fixtures import two_attribute_interface


def first_turn(interface, store):  # type: ignore[no-untyped-def]
    return run_turn(interface, InterfaceState.initial(interface), "q", store, SeededRandomSource(0))


def test_compliant_interface_runs() -> None:
    interface, store, _ = two_attribute_interface()
    assert contract_violations(interface) == []
    result = first_turn(interface, store)
    assert result.state.ledgers == (Fraction(2, 3), Fraction(2, 3))


def test_c1_vocabulary_without_its_generic_view() -> None:
    with pytest.raises(ContractViolation) as error:
        Vocabulary(slot="s", views=(View("v0"), View("v1")), generic="missing")
    assert error.value.condition == "C1"
    assert "slot s" in str(error.value)


def test_c1_store_dependent_vocabulary_is_refused() -> None:
    interface, store, _ = two_attribute_interface(
        hooks=PrivateHooks(vocabulary=lambda slot, store: Vocabulary(slot=slot, views=(View("v0"), View("v*")), generic="v0"))
    )
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C1"


def test_c2_charge_set_omitting_an_affected_attribute() -> None:
    interface, store, _ = two_attribute_interface(charge=frozenset({"b"}))
    assert [v.condition for v in contract_violations(interface)] == ["C2"]
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C2"
    assert "attribute a" in str(error.value) and "slot s" in str(error.value)


def test_c2_runtime_check_without_static_check() -> None:
    """plan_slot itself checks Gamma_{t,g} ⊇ Gamma*(R) (Eq. 4), not only the static checker."""
    from dpmem_ref import plan_slot
    from dpmem_ref.core.transcript import PublicPrefix
    from dpmem_ref.turn import zero_ledgers

    interface, store, _ = two_attribute_interface(charge=frozenset({"b"}))
    prefix = PublicPrefix(history=(), query=interface.query("q"))
    with pytest.raises(ContractViolation, match="C2"):
        plan_slot(interface, zero_ledgers(interface), prefix, "s", store)


def test_c3_argmax_selector() -> None:
    interface, store, _ = two_attribute_interface(selector=ArgmaxSelector())
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C3"


@pytest.mark.parametrize("bad", [Fraction(3, 2), Fraction(-1, 10)])
def test_c3_scores_outside_unit_interval(bad: Fraction) -> None:
    def scorer(relevance: Mapping[str, Fraction], vocabulary: Vocabulary, items: tuple[object, ...]) -> tuple[Fraction, ...]:
        return (bad, Fraction(0))

    interface, store, _ = two_attribute_interface(scorer=FunctionScorer(function=scorer, declared_sensitivity=Fraction(1)))
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C3"
    # The offending value is internal: the message names its position only.
    assert str(bad) not in str(error.value) and "score #0" in str(error.value)


def test_c3_non_positive_sensitivity() -> None:
    interface, store, _ = two_attribute_interface(
        scorer=FunctionScorer(function=lambda r, v, i: (Fraction(0), Fraction(1)), declared_sensitivity=Fraction(0))
    )
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C3"


def test_c4_memory_dependent_slot_activation() -> None:
    def routing(query, history, store):  # type: ignore[no-untyped-def]
        return ("s",) if "flag" in store.items[0].tags else ("t",)

    interface, store, _ = two_attribute_interface(hooks=PrivateHooks(routing=routing))
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C4"


def test_c4_read_set_reaching_into_another_slot() -> None:
    interface, _, _ = two_attribute_interface()
    query = interface.queries[0]
    broken_query = type(query)(name="q", text="x", reads=(SlotRead(slot="s", positions=frozenset({1, 3})),))
    from attrs import evolve

    broken = evolve(interface, queries=(broken_query,))
    assert [v.condition for v in contract_violations(broken)] == ["C4"]


def test_c5_no_cap() -> None:
    interface, store, _ = two_attribute_interface(cap_rule=NoCap())
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C5"


def test_c5_runtime_assertion_catches_an_overshooting_cap_rule() -> None:
    """A cap rule that claims compliance but checks L_a < B_a (not L_a + eps <= B_a) is
    caught by the ledger assertion after the update."""

    class LenientCap:
        name = "lenient"
        violates = None
        prospective = False

        def admits(self, ledgers, caps, charge_set, epsilon):  # type: ignore[no-untyped-def]
            return all(ledgers[a] < caps[a] for a in charge_set)

    interface, store, _ = two_attribute_interface(cap_rule=LenientCap())
    state = InterfaceState.initial(interface)
    source = SeededRandomSource(0)
    for _ in range(3):
        state = run_turn(interface, state, "q", store, source).state
    assert state.ledgers == (Fraction(2), Fraction(2))
    state = InterfaceState(turn=3, ledgers=(Fraction(5, 3), Fraction(5, 3)), history=())
    with pytest.raises(ContractViolation) as error:
        run_turn(interface, state, "q", store, source)
    assert error.value.condition == "C5" and "exceeds cap" in str(error.value)


@pytest.mark.parametrize("control", [RawEvidenceControl(), TopScoreControl()])
def test_c6_memory_dependent_controls(control: object) -> None:
    interface, store, _ = two_attribute_interface(control=control)
    with pytest.raises(ContractViolation) as error:
        first_turn(interface, store)
    assert error.value.condition == "C6"


def test_broken_parts_run_when_not_strict() -> None:
    """strict=False runs a broken variant (audits, counterexamples) through the same code."""
    interface, store, store_prime = two_attribute_interface(selector=ArgmaxSelector(), control=RawEvidenceControl())
    state = InterfaceState.initial(interface)
    a = run_turn(interface, state, "q", store, SeededRandomSource(0), strict=False).record
    b = run_turn(interface, state, "q", store_prime, SeededRandomSource(0), strict=False).record
    assert a.views == (("s", "v1"),) and b.views == (("s", "v0"),)
    assert a.control == 1 and b.control == 0


def test_llm_channel_receives_public_inputs_only() -> None:
    """Eq. (2): the channel is called with (q_t, released view texts, ordinary prefix)."""
    calls: list[tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, Hashable, str], ...]]] = []

    class RecordingChannel:
        def respond(self, query, views, prefix):  # type: ignore[no-untyped-def]
            calls.append((query, views, prefix))
            return "ok"

    interface, store, _ = two_attribute_interface()
    state = InterfaceState.initial(interface)
    source = SeededRandomSource(0)
    for _ in range(2):
        state = run_turn(interface, state, "q", store, source, channel=RecordingChannel()).state
    assert calls[0][0] == "query" and calls[0][2] == ()
    assert calls[1][2] == (state.history[0].ordinary(),)
    for query, views, prefix in calls:
        assert all(isinstance(text, str) for _, text in views)
        assert "flag" not in repr((query, views, prefix))
