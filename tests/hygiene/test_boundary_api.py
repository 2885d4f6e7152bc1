"""The kernel's public Python API checks its inputs at the boundary.

Written as an attacker would call it: every numeric type that is not an exact rational
(float, NaN, infinities, Decimal, str, bool, numpy scalars, None, containers), every
sign and magnitude of an exact one, every vector length, through every public entry
point that takes ledgers, eps or an interface (`run_turn`, `begin_turn`, `plan_slot`,
`run_interaction`, the cursor's `rebase` / `release(ledgers=...)`, `Interface`). Each is
refused with one-line InputError naming the argument; an in-range exact ledger is accepted
and planned exactly as before (0 <= L_a <= B_a admits and charges as Algorithm 1 says).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import attrs
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from dpmem_ref import (
    InputError,
    InterfaceState,
    PublicPrefix,
    SeededRandomSource,
    begin_turn,
    plan_slot,
    run_interaction,
    run_turn,
)
from tests.kernel_fixtures import figure2

LOADED = figure2()
INTERFACE = LOADED.interface
STORE = LOADED.store("M")
CAPS = tuple(a.cap for a in INTERFACE.policy.attributes)  # (2, 8)
QUERY = "affordable-dinner"
N = len(CAPS)

INEXACT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-320, 1e308]),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=8),
    st.sampled_from(["1/2", "0", "2", "nan", "inf"]),
    st.sampled_from([np.int64(0), np.int32(1), np.float64(0.5), np.float32(1), np.bool_(False), np.uint8(1)]),
    st.none(),
    st.complex_numbers(),
    st.lists(st.integers(0, 1), max_size=2),
    st.builds(object),
)
"""A single ledger entry that is not an exact rational: refused by its type."""


def out_of_range(cap: Fraction) -> st.SearchStrategy[Fraction | int]:
    """Exact rationals outside [0, cap]: negative (any size) or past the cap (any size)."""
    below = st.fractions(max_value=Fraction(-1, 10**30), max_denominator=10**40)
    tiny_below = st.integers(1, 10**40).map(lambda d: Fraction(-1, d))
    above = st.fractions(min_value=cap + Fraction(1, 10**30), max_denominator=10**40)
    just_above = st.integers(1, 10**40).map(lambda d: cap + Fraction(1, d))
    huge = st.integers(1, 10**400).flatmap(lambda n: st.sampled_from([n + int(cap), -n]))
    return st.one_of(below, tiny_below, above, just_above, huge)


def in_range(cap: Fraction) -> st.SearchStrategy[Fraction]:
    return st.fractions(min_value=0, max_value=cap, max_denominator=10**6)


def with_entry(index: int, value: object) -> tuple[object, ...]:
    ledgers: list[object] = [Fraction(0)] * N
    ledgers[index] = value
    return tuple(ledgers)


def _state(ledgers: object, turn: object = 0, history: object = ()) -> InterfaceState:
    return InterfaceState(turn=turn, ledgers=ledgers, history=history)  # type: ignore[arg-type]


def _prefix() -> PublicPrefix:
    return PublicPrefix(history=(), query=INTERFACE.query(QUERY), released=())


def _cursor() -> object:
    return begin_turn(INTERFACE, InterfaceState.initial(INTERFACE), QUERY, STORE)


ENTRY_POINTS: dict[str, tuple[str, Callable[[object], object]]] = {
    "run_turn": ("state.ledgers", lambda ls: run_turn(INTERFACE, _state(ls), QUERY, STORE, SeededRandomSource(0))),
    "begin_turn": ("state.ledgers", lambda ls: begin_turn(INTERFACE, _state(ls), QUERY, STORE)),
    "plan_slot": ("ledgers", lambda ls: plan_slot(INTERFACE, ls, _prefix(), "food", STORE)),  # type: ignore[arg-type]
    "rebase": ("ledgers", lambda ls: _cursor().rebase(ls)),  # type: ignore[attr-defined]
    "release": ("ledgers", lambda ls: _cursor().release(_cursor().plan().vocabulary.generic, ledgers=ls)),  # type: ignore[attr-defined]
}
NAMES = sorted(ENTRY_POINTS)


def refused(call: Callable[[], object], field: str) -> str:
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert message.startswith(field), (field, message)
    assert "\n" not in message and len(message) < 300, message
    return message


@pytest.mark.parametrize("name", NAMES)
@given(index=st.integers(0, N - 1), value=INEXACT)
def test_inexact_ledger_entries_are_refused_by_type(name: str, index: int, value: object) -> None:
    field, call = ENTRY_POINTS[name]
    message = refused(lambda: call(with_entry(index, value)), f"{field}[{index}]")
    assert "exact rational" in message


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data(), index=st.integers(0, N - 1))
def test_ledgers_outside_zero_to_cap_are_refused(name: str, data: st.DataObject, index: int) -> None:
    """A negative ledger would re-grant budget (run_turn then admits selections past B_a);
    one past B_a breaks C5 before the turn starts."""
    field, call = ENTRY_POINTS[name]
    value = data.draw(out_of_range(CAPS[index]))
    message = refused(lambda: call(with_entry(index, value)), f"{field}[{index}]")
    assert f"[0, {CAPS[index]}]" in message or "denominator" in message


@pytest.mark.parametrize("name", NAMES)
@given(
    length=st.integers(0, 70).filter(lambda n: n != N),
    shape=st.sampled_from([tuple, list, "dict", "str", "set", "gen", "none", "int"]),
)
def test_ledger_vectors_of_the_wrong_length_or_shape_are_refused(name: str, length: int, shape: object) -> None:
    field, call = ENTRY_POINTS[name]
    values = [Fraction(0)] * length
    vector: object = {
        "dict": dict(enumerate(values)),
        "str": "0" * length,
        "set": set(values),
        "gen": (v for v in values),
        "none": None,
        "int": 0,
    }.get(shape, None) if isinstance(shape, str) else shape(values)  # type: ignore[operator]
    assume(not (name == "release" and vector is None))  # release(view) without ledgers: the plan's own
    refused(lambda: call(vector), field)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_exact_in_range_ledgers_are_accepted_and_planned_exactly(name: str, data: st.DataObject) -> None:
    """The tightness twin: anything in [0, B_a] (Fraction or int) passes, and the plan
    charges exactly eps where L_a + eps <= B_a (Algorithm 1, line 9), else falls back."""
    ledgers = tuple(data.draw(in_range(cap)) for cap in CAPS)
    if data.draw(st.booleans()):
        ledgers = tuple(int(v) if v.denominator == 1 else v for v in ledgers)  # type: ignore[misc]
    field, call = ENTRY_POINTS[name]
    call(ledgers)
    plan = plan_slot(INTERFACE, ledgers, _prefix(), "food", STORE)
    epsilon = plan.epsilon
    charged = [i for i, a in enumerate(INTERFACE.policy.attribute_names) if a in plan.charge_set]
    fits = all(ledgers[i] + epsilon <= CAPS[i] for i in charged)
    assert plan.admitted == fits
    expected = tuple(Fraction(v) + (epsilon if fits and i in charged else 0) for i, v in enumerate(ledgers))
    assert plan.ledgers_after == expected and all(type(v) is Fraction for v in plan.ledgers_after)


def test_the_cap_itself_is_accepted_and_one_past_it_refused() -> None:
    at_cap = CAPS
    plan = plan_slot(INTERFACE, at_cap, _prefix(), "food", STORE)
    assert not plan.admitted and plan.ledgers_after == at_cap  # full: falls back, charges nothing
    refused(lambda: plan_slot(INTERFACE, (CAPS[0] + Fraction(1, 10**9), CAPS[1]), _prefix(), "food", STORE), "ledgers[0]")
    refused(lambda: plan_slot(INTERFACE, (Fraction(-1, 10**9), Fraction(0)), _prefix(), "food", STORE), "ledgers[0]")


@pytest.mark.parametrize("name", NAMES)
@given(extra=st.integers(1, 500), prime=st.sampled_from([2, 3, 7, 10, 997]))
def test_ledgers_with_oversized_denominators_are_refused(name: str, extra: int, prime: int) -> None:
    """In range, but a denominator past MAX_LEDGER_DIGITS digits: the integer ledgers would
    grow without bound (dpmem_ref.core.limits). One digit less is accepted."""
    field, call = ENTRY_POINTS[name]
    denominator = prime ** (math.ceil(1000 / math.log10(prime)) + extra)
    message = refused(lambda: call(with_entry(0, Fraction(1, denominator))), field)
    assert "at most 1000 digits" in message
    call(with_entry(0, Fraction(1, 10**999)))


def test_negative_ledgers_no_longer_buy_selections_past_the_cap() -> None:
    """The attack: start a turn from L_a = -5 and be admitted until the true
    spend exceeds B_a. Refused before the first plan."""
    state = _state((Fraction(-5), Fraction(-5)))
    refused(lambda: run_turn(INTERFACE, state, QUERY, STORE, SeededRandomSource(0)), "state.ledgers[0]")


def test_lenient_runs_allow_ledgers_past_the_cap_but_never_negative() -> None:
    """strict=False runs broken cap rules (NoCap) whose ledgers legitimately pass B_a."""
    past = (CAPS[0] + 1, CAPS[1])
    plan_slot(INTERFACE, past, _prefix(), "food", STORE, strict=False)
    refused(lambda: plan_slot(INTERFACE, (Fraction(-1), Fraction(0)), _prefix(), "food", STORE, strict=False), "ledgers[0]")


BAD_ARGUMENTS: list[tuple[str, Callable[[], object], str]] = [
    ("interface None", lambda: run_turn(None, InterfaceState.initial(INTERFACE), QUERY, STORE, SeededRandomSource(0)), "interface"),  # type: ignore[arg-type]
    ("state dict", lambda: run_turn(INTERFACE, {"turn": 0}, QUERY, STORE, SeededRandomSource(0)), "state"),  # type: ignore[arg-type]
    ("turn -1", lambda: begin_turn(INTERFACE, _state(CAPS, turn=-1), QUERY, STORE), "state.turn"),
    ("turn float", lambda: begin_turn(INTERFACE, _state(CAPS, turn=1.0), QUERY, STORE), "state.turn"),
    ("turn bool", lambda: begin_turn(INTERFACE, _state(CAPS, turn=True), QUERY, STORE), "state.turn"),
    ("history list", lambda: begin_turn(INTERFACE, _state(CAPS, history=[]), QUERY, STORE), "state.history"),
    ("history of str", lambda: run_turn(INTERFACE, _state(CAPS, history=("x",)), QUERY, STORE, SeededRandomSource(0)), "state.history[0]"),
    ("query int", lambda: begin_turn(INTERFACE, InterfaceState.initial(INTERFACE), 5, STORE), "query"),  # type: ignore[arg-type]
    ("query unknown", lambda: begin_turn(INTERFACE, InterfaceState.initial(INTERFACE), "nope", STORE), "query"),
    ("store None", lambda: begin_turn(INTERFACE, InterfaceState.initial(INTERFACE), QUERY, None), "store"),  # type: ignore[arg-type]
    ("strict str", lambda: begin_turn(INTERFACE, InterfaceState.initial(INTERFACE), QUERY, STORE, "no"), "strict"),  # type: ignore[arg-type]
    ("source None", lambda: run_turn(INTERFACE, InterfaceState.initial(INTERFACE), QUERY, STORE, None), "source"),  # type: ignore[arg-type]
    ("source int", lambda: run_turn(INTERFACE, InterfaceState.initial(INTERFACE), QUERY, STORE, 7), "source"),  # type: ignore[arg-type]
    ("channel str", lambda: run_turn(INTERFACE, InterfaceState.initial(INTERFACE), QUERY, STORE, SeededRandomSource(0), "x"), "channel"),  # type: ignore[arg-type]
    ("queries str", lambda: run_interaction(INTERFACE, QUERY, STORE, SeededRandomSource(0)), "queries"),
    ("queries of int", lambda: run_interaction(INTERFACE, [QUERY, 3], STORE, SeededRandomSource(0)), "queries[1]"),  # type: ignore[list-item]
    ("interaction source", lambda: run_interaction(INTERFACE, [QUERY], STORE, object()), "source"),  # type: ignore[arg-type]
    ("prefix None", lambda: plan_slot(INTERFACE, CAPS, None, "food", STORE), "prefix"),  # type: ignore[arg-type]
    ("prefix query str", lambda: plan_slot(INTERFACE, CAPS, PublicPrefix((), QUERY, ()), "food", STORE), "prefix.query"),  # type: ignore[arg-type]
    ("slot int", lambda: plan_slot(INTERFACE, CAPS, _prefix(), 1, STORE), "slot"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("name", "call", "field"), BAD_ARGUMENTS, ids=[c[0] for c in BAD_ARGUMENTS])
def test_every_other_argument_is_checked(name: str, call: Callable[[], object], field: str) -> None:
    refused(call, field)


EPSILONS = st.one_of(
    INEXACT.filter(lambda v: not (isinstance(v, int) and not isinstance(v, bool))),
    st.fractions(max_value=0, max_denominator=10**9),
    st.integers(max_value=0),
)


@given(value=EPSILONS)
def test_uncharged_epsilon_is_an_exact_positive_rational_at_construction(value: object) -> None:
    message = refused(lambda: attrs.evolve(INTERFACE, uncharged_epsilon=value), "uncharged_epsilon")
    assert "positive exact rational" in message


@given(value=st.one_of(st.fractions(min_value=Fraction(1, 10**9), max_value=10**6, max_denominator=10**9), st.integers(1, 10**6)))
def test_an_exact_positive_uncharged_epsilon_is_kept_exactly(value: Fraction | int) -> None:
    interface = attrs.evolve(INTERFACE, uncharged_epsilon=value)
    assert type(interface.uncharged_epsilon) is Fraction and interface.uncharged_epsilon == value


PARTS: list[tuple[str, object]] = [
    ("policy", None),
    ("vocabularies", list(INTERFACE.vocabularies)),
    ("vocabularies", ("food",)),
    ("queries", [*INTERFACE.queries]),
    ("queries", (QUERY,)),
    ("scorer", object()),
    ("budget", 3),
    ("router", "fixed"),
    ("selector", None),
    ("cap_rule", Decimal(1)),
    ("control", lambda context: 0),
    ("hooks", None),
    ("name", 5),
]


@pytest.mark.parametrize(("field", "value"), PARTS, ids=[f"{f}={type(v).__name__}" for f, v in PARTS])
def test_interface_parts_are_checked_at_construction(field: str, value: object) -> None:
    refused(lambda: attrs.evolve(INTERFACE, **{field: value}), field)


def test_a_checked_turn_runs_as_before() -> None:
    """The checks change no value: a fixed seed gives the same transcript and exact ledgers
    through run_interaction (checked once) and run_turn (checked every turn)."""
    queries = [QUERY, "checkup-reminder"] * 4
    state = run_interaction(INTERFACE, queries, STORE, SeededRandomSource(3))
    source = SeededRandomSource(3)
    step = InterfaceState.initial(INTERFACE)
    for query in queries:
        step = run_turn(INTERFACE, step, query, STORE, source).state
    assert step == state and all(type(v) is Fraction for v in state.ledgers)


@given(value=INEXACT | st.fractions(max_value=0) | st.integers(max_value=0), where=st.sampled_from(["epsilon", "sensitivity"]))
def test_the_exponential_mechanism_takes_positive_exact_eps_and_delta(value: object, where: str) -> None:
    from dpmem_ref import exponential_mechanism

    args = {"epsilon": Fraction(1), "sensitivity": Fraction(1), where: value}
    refused(lambda: exponential_mechanism(("a", "b"), (Fraction(1), Fraction(0)), **args), where)  # type: ignore[arg-type]


@given(score=INEXACT | st.fractions().filter(lambda u: not 0 <= u <= 1), index=st.integers(0, 1))
def test_the_exponential_mechanism_takes_exact_scores_in_the_unit_interval(score: object, index: int) -> None:
    from dpmem_ref import exponential_mechanism

    scores: list[object] = [Fraction(1), Fraction(0)]
    scores[index] = score
    refused(lambda: exponential_mechanism(("a", "b"), scores, Fraction(1), Fraction(1)), f"scores[{index}]")  # type: ignore[arg-type]


@given(gamma=INEXACT.filter(lambda g: not (isinstance(g, int) and not isinstance(g, bool))) | st.fractions(max_value=Fraction(-1, 10**9)))
def test_bernoulli_exp_minus_takes_a_non_negative_exact_gamma(gamma: object) -> None:
    from dpmem_ref import bernoulli_exp_minus

    refused(lambda: bernoulli_exp_minus(gamma, SeededRandomSource(0)), "gamma")  # type: ignore[arg-type]
