"""The policy layer (dpmem_ref.core.policy): layouts, attributes and their groups I_a, stores,
differing positions and the adjacency ~_a of Corollary 1. Bad input is refused with one exact
line naming the field (the whole message is asserted: mutmut changes a field, an expectation
or a found value, and only a whole-message assertion tells), next to the boundary accepted.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import (
    Attribute,
    InputError,
    Layout,
    MemoryItem,
    OnlineBudget,
    Policy,
    Store,
    adjacent_attributes,
    differing_positions,
    is_adjacent,
)
from dpmem_ref.core.policy import MAX_ATTRIBUTES, MAX_POSITIONS, require_adjacent
from dpmem_ref.mechanism.em import ExponentialWeights
from tests.kernel_fixtures import (
    FOUR_POSITION_LAYOUT,
    OVERLAPPING_POLICY,
    item,
    make_store,
)

THREE_POSITION_LAYOUT = Layout(("g", "g", "h"))


A = Attribute("a", frozenset({1}), Fraction(1))


def test_store_replace_changes_only_the_given_positions():
    base = make_store()
    other = base.replace({2: item("q")}, name="M2")
    assert other.name == "M2"
    assert other.items[1] == item("q")
    assert other.items[0] == base.items[0] and other.items[2:] == base.items[2:]
    assert base.items[1] == item("y")  # frozen: the original is untouched
    assert differing_positions(base, other) == frozenset({2})
    assert base.replace({}).items == base.items and base.replace({}).name == ""
    with pytest.raises(InputError) as error:
        base.replace({5: item("q")})
    assert error.value.field == "position"


def test_store_size_is_named():
    with pytest.raises(InputError) as error:
        Store(layout=FOUR_POSITION_LAYOUT, items=(item("x"),), name="M")
    assert str(error.value) == "stores.M: expected 4 items, found 1"
    with pytest.raises(InputError) as error:
        Store(layout=FOUR_POSITION_LAYOUT, items=())
    assert error.value.field == "stores.?"


def test_memory_contents_never_appear_in_reprs():
    secret = item("diabetes-secret")
    assert repr(secret) == "MemoryItem(<private>)"
    text = repr(make_store(p1=secret))
    assert "secret" not in text and text == "Store(name='M', positions=4, <private contents>)"


def test_differing_positions_are_one_based_and_need_one_layout():
    base = make_store()
    assert differing_positions(base, base) == frozenset()
    assert differing_positions(base, make_store(p1=item("v"), p4=item("v"))) == frozenset({1, 4})
    with pytest.raises(InputError) as error:
        differing_positions(base, Store.from_mapping(Layout(("g",)), {}, "tiny"))
    assert error.value.field == "stores"
    assert "same layout" in error.value.expected


def test_differing_positions_error_is_complete():
    with pytest.raises(InputError) as error:
        differing_positions(make_store(), Store.from_mapping(Layout(("g",)), {}, "tiny"))
    assert str(error.value) == "stores: expected two stores with the same layout (same scaffold), found 'different layouts'"


def test_adjacency_follows_the_groups():
    base = make_store()
    only_2 = make_store("M'", p2=item("v"))  # inside I_a and I_b
    only_1 = make_store("M'", p1=item("v"))  # inside I_a only
    both = make_store("M'", p1=item("v"), p3=item("v"))  # needs I_a and I_b
    outside = make_store("M'", p4=item("v"))  # in no group
    assert adjacent_attributes(OVERLAPPING_POLICY, base, only_2) == ("a", "b")
    assert adjacent_attributes(OVERLAPPING_POLICY, base, only_1) == ("a",)
    assert adjacent_attributes(OVERLAPPING_POLICY, base, both) == ()
    assert adjacent_attributes(OVERLAPPING_POLICY, base, base) == ("a", "b")
    assert is_adjacent(OVERLAPPING_POLICY, "a", base, only_1) and not is_adjacent(OVERLAPPING_POLICY, "b", base, only_1)
    assert is_adjacent(OVERLAPPING_POLICY, "b", base, only_2) and not is_adjacent(OVERLAPPING_POLICY, "a", base, outside)
    require_adjacent(OVERLAPPING_POLICY, "a", base, only_1)
    require_adjacent(OVERLAPPING_POLICY, "b", base, base)
    with pytest.raises(InputError) as error:
        require_adjacent(OVERLAPPING_POLICY, "b", base, both)
    assert error.value.field == "stores M/M'"
    assert error.value.expected == "stores equal outside I_b"
    assert error.value.found == "differences at positions [1]"
    unnamed = Store.from_mapping(FOUR_POSITION_LAYOUT, {})
    with pytest.raises(InputError) as error:
        require_adjacent(OVERLAPPING_POLICY, "a", unnamed, unnamed.replace({4: item("v")}))
    assert error.value.field == "stores A/B"
    assert error.value.found == "differences at positions [4]"


def test_adjacency_includes_a_difference_filling_the_whole_group():
    base = make_store()
    whole_a = make_store("M'", p1=item("v"), p2=item("v"))  # D = I_a exactly
    assert adjacent_attributes(OVERLAPPING_POLICY, base, whole_a) == ("a",)
    assert is_adjacent(OVERLAPPING_POLICY, "a", base, whole_a)
    require_adjacent(OVERLAPPING_POLICY, "a", base, whole_a)


def test_policy_and_layout_name_bad_lookups():
    with pytest.raises(InputError) as error:
        OVERLAPPING_POLICY.attribute("zz")
    assert str(error.value) == "attribute: expected one of ['a', 'b'], found 'zz'"
    with pytest.raises(InputError) as error:
        FOUR_POSITION_LAYOUT.slot_of(9)
    assert error.value.field == "position"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Attribute("debt", frozenset({1}), Fraction(0)), "attributes.debt.cap: expected a positive exact rational, found Fraction(0, 1)"),
        (lambda: Attribute("debt", frozenset({1}), 0.5), "attributes.debt.cap: expected a positive exact rational, found 0.5"),
        (lambda: Attribute("debt", frozenset(), Fraction(1)), "attributes.debt.group: expected a non-empty list of positions, found '[]'"),
        (lambda: Policy(FOUR_POSITION_LAYOUT, (Attribute("a", frozenset({1}), Fraction(1)),) * 2),
         "attributes: expected unique attribute names, found ['a', 'a']"),
        (lambda: Store.from_mapping(FOUR_POSITION_LAYOUT, {7: item("x")}, "M"), "stores.M: expected a position in 1..4, found 7"),
        (lambda: Store.from_mapping(FOUR_POSITION_LAYOUT, {0: item("x")}), "stores.?: expected a position in 1..4, found 0"),
        (lambda: Store.from_mapping(FOUR_POSITION_LAYOUT, {True: item("x")}), "stores.?: expected a position in 1..4, found True"),
        (lambda: FOUR_POSITION_LAYOUT.slot_of("1"), "position: expected a position in 1..4, found '1'"),
        (lambda: Layout(()), "positions: expected at least one position, found 'an empty list'"),
        (lambda: Layout(("g", "")), "positions[2]: expected a slot name, found ''"),
        (lambda: Layout(("g", 5)), "positions[2]: expected a slot name, found 5"),
        (lambda: Layout(("g",) * (MAX_POSITIONS + 1)),
         f"positions: expected at most {MAX_POSITIONS} positions, found {MAX_POSITIONS + 1}"),
        (lambda: Policy(FOUR_POSITION_LAYOUT, tuple(Attribute(f"a{k}", frozenset({1}), Fraction(1)) for k in range(MAX_ATTRIBUTES + 1))),
         f"attributes: expected at most {MAX_ATTRIBUTES} attributes, found {MAX_ATTRIBUTES + 1}"),
        (lambda: Policy(FOUR_POSITION_LAYOUT, (Attribute("a", frozenset({5}), Fraction(1)),)),
         "attributes.a.group: expected a position in 1..4, found 5"),
    ],
)
def test_policy_inputs_are_named_whole(build, message):
    with pytest.raises(InputError) as error:
        build()
    assert str(error.value) == message


def test_the_largest_policy_is_accepted():
    names = Policy(FOUR_POSITION_LAYOUT, tuple(Attribute(f"a{k}", frozenset({1}), Fraction(1)) for k in range(MAX_ATTRIBUTES)))
    assert len(names.attribute_names) == MAX_ATTRIBUTES
    assert Layout(("g",) * MAX_POSITIONS).size == MAX_POSITIONS


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Layout(()), "positions: expected at least one position, found 'an empty list'"),
        (lambda: Layout(("g",) * (MAX_POSITIONS + 1)), "positions: expected at most 4096 positions, found 4097"),
        (lambda: Layout(("g", "")), "positions[2]: expected a slot name, found ''"),
        (lambda: Layout(("g", 3)), "positions[2]: expected a slot name, found 3"),
        (lambda: THREE_POSITION_LAYOUT.check_position(0, "pos"), "pos: expected a position in 1..3, found 0"),
        (lambda: THREE_POSITION_LAYOUT.check_position(4, "pos"), "pos: expected a position in 1..3, found 4"),
        (lambda: THREE_POSITION_LAYOUT.check_position(True, "pos"), "pos: expected a position in 1..3, found True"),
        (lambda: THREE_POSITION_LAYOUT.check_position("1", "pos"), "pos: expected a position in 1..3, found '1'"),
        (lambda: Attribute("a", frozenset({1}), Fraction(0)),
         "attributes.a.cap: expected a positive exact rational, found Fraction(0, 1)"),
        (lambda: Attribute("a", frozenset({1}), 1), "attributes.a.cap: expected a positive exact rational, found 1"),
        (lambda: Attribute("a", frozenset(), Fraction(1)),
         "attributes.a.group: expected a non-empty list of positions, found '[]'"),
        (lambda: Policy(THREE_POSITION_LAYOUT, (A, A)), "attributes: expected unique attribute names, found ['a', 'a']"),
        (lambda: Policy(THREE_POSITION_LAYOUT, tuple(Attribute(f"a{i}", frozenset({1}), Fraction(1)) for i in range(MAX_ATTRIBUTES + 1))),
         "attributes: expected at most 64 attributes, found 65"),
        (lambda: Policy(THREE_POSITION_LAYOUT, (Attribute("b", frozenset({1, 4}), Fraction(1)),)),
         "attributes.b.group: expected a position in 1..3, found 4"),
        (lambda: Policy(THREE_POSITION_LAYOUT, (A,)).attribute("zz"), "attribute: expected one of ['a'], found 'zz'"),
        (lambda: Store(THREE_POSITION_LAYOUT, (MemoryItem(),), "M"), "stores.M: expected 3 items, found 1"),
        (lambda: Store(THREE_POSITION_LAYOUT, (MemoryItem(),)), "stores.?: expected 3 items, found 1"),
        (lambda: Store.from_mapping(THREE_POSITION_LAYOUT, {4: MemoryItem()}, "M"), "stores.M: expected a position in 1..3, found 4"),
        (lambda: Store.from_mapping(THREE_POSITION_LAYOUT, {0: MemoryItem()}), "stores.?: expected a position in 1..3, found 0"),
        (lambda: OnlineBudget(K=2).epsilon(frozenset(), {"a": Fraction(1)}),
         "charge set: expected a non-empty set of attributes, found '{}'"),
        (lambda: OnlineBudget(K=2).epsilon(frozenset({"zz", "b"}), {"a": Fraction(1)}),
         "charge set: expected attributes among ['a'], found ['b', 'zz']"),
        (lambda: ExponentialWeights(views=("a", "b"), exponents=(Fraction(1),)),
         "exponential mechanism: expected one exponent per view, found 1"),
        (lambda: ExponentialWeights(views=(), exponents=()), "exponential mechanism: expected one exponent per view, found 0"),
        (lambda: ExponentialWeights(views=("a", "b"), exponents=(Fraction(1), 1)),
         "exponential mechanism exponent #1: expected an exact rational (Fraction), found 'int'"),
    ],
)
def test_bad_input_is_refused_with_one_exact_line(build, message):
    with pytest.raises(InputError) as error:
        build()
    assert str(error.value) == message


def test_the_boundaries_next_to_each_refusal_are_accepted():
    assert Layout(("g",) * MAX_POSITIONS).size == MAX_POSITIONS
    assert THREE_POSITION_LAYOUT.check_position(1, "pos") == 1 and THREE_POSITION_LAYOUT.check_position(3, "pos") == 3
    many = Policy(THREE_POSITION_LAYOUT, tuple(Attribute(f"a{i}", frozenset({1, 3}), Fraction(1)) for i in range(MAX_ATTRIBUTES)))
    assert len(many.attribute_names) == MAX_ATTRIBUTES and many.gamma_star({3}) == frozenset(many.attribute_names)
    policy = Policy(THREE_POSITION_LAYOUT, (A, Attribute("b", frozenset({2, 3}), Fraction(2))))
    assert policy.attribute("b").cap == 2 and policy.gamma_star({2}) == frozenset({"b"})
    assert policy.gamma_star({1, 2}) == frozenset({"a", "b"}) and policy.gamma_star(()) == frozenset()
    store = Store.from_mapping(THREE_POSITION_LAYOUT, {1: MemoryItem(frozenset({"x"})), 3: MemoryItem(frozenset({"z"}))}, "M")
    assert store.items == (MemoryItem(frozenset({"x"})), MemoryItem(), MemoryItem(frozenset({"z"})))
    assert store.name == "M" and Store.from_mapping(THREE_POSITION_LAYOUT, {}).name == ""
    assert OnlineBudget(K=2).epsilon(frozenset({"a"}), {"a": Fraction(1)}) == Fraction(1, 2)
