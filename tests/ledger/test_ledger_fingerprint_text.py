"""The interface fingerprint is stored in every ledger it binds, so its text is a stored format:
the canonical JSON of each kind of value is pinned here, and the fingerprints of reference
interfaces too. A change to either refuses every ledger bound before it (the fix is a new
FINGERPRINT_VERSION with a migration, never a silent change). test_fingerprint_variant_table.py
checks the other direction: every charge-deciding field changes the fingerprint."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import attrs
import pytest
from test_fingerprint_variant_table import base, declared_charge, preallocated

from dpmem_ref.core.views import Vocabulary
from dpmem_ref.interface import Interface
from dpmem_ref.ledger import interface_fingerprint
from dpmem_ref.ledger.fingerprint import _canonical, interface_description


@attrs.frozen
class Part:
    name: str
    weight: Fraction
    _private: int = 0  # init alias `private`: not a declared public field
    derived: int = attrs.field(init=False, default=7)


@attrs.frozen
class Record:
    z: int
    a: int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (3, "3"),
        ("s", '"s"'),
        (Fraction(2, 4), '"1/2"'),
        (frozenset({"b", "a"}), '["a","b"]'),
        ({Fraction(1, 2), 3}, '["1/2",3]'),  # sorted by each item's JSON text
        ((1, Fraction(1, 3), ("x",)), '[1,"1/3",["x"]]'),
        ([Fraction(5)], '["5/1"]'),
        ({2: "x", 1: Fraction(1)}, '{"1":"1/1","2":"x"}'),  # keys as text, in sorted order
        ({1: "a", "b": 2}, '{"1":"a","b":2}'),  # keys of mixed types: sorted by their text
        (frozenset({8, 1}), "[1,8]"),  # a set that iterates 8 first
        (
            frozenset({Record(1, 2), Record(2, 1)}),
            '[{"type":"Record","z":2,"a":1},{"type":"Record","z":1,"a":2}]',
        ),  # sorted by each record's text with sorted keys ('{"a":1,...' first), not its field order
        (Part("p", Fraction(3, 2), 5), '{"type":"Part","name":"p","weight":"3/2"}'),
        (object(), '{"type":"object"}'),  # a part without declared fields: its kind alone
    ],
    ids=[
        "none",
        "bool",
        "int",
        "str",
        "fraction",
        "set",
        "mixed-set",
        "tuple",
        "list",
        "mapping",
        "mixed-keys",
        "set-order",
        "set-of-records",
        "attrs",
        "other",
    ],
)
def test_each_kind_of_value_has_one_canonical_text(value: object, text: str) -> None:
    assert json.dumps(_canonical(value), separators=(",", ":")) == text


def test_the_figure2_description_is_pinned() -> None:
    described = interface_description(base())
    assert described["version"] == 2
    assert described["positions"] == ["health", "food", "food", "finance", "finance", "schedule"]
    assert described["attributes"] == [
        {"name": "debt", "group": [3, 4, 5], "cap": "8/1"},
        {"name": "diabetes", "group": [1, 2, 3], "cap": "2/1"},
    ]
    assert described["routes"][0] == {
        "query": "affordable-dinner",
        "reads": [
            {"slot": "food", "positions": [2, 3], "charge": None},
            {"slot": "finance", "positions": [4, 5], "charge": None},
        ],
    }
    assert [route["query"] for route in described["routes"]] == [
        "affordable-dinner",
        "checkup-reminder",
        "weeknight-plan",
    ]
    assert described["budget"] == {"type": "OnlineBudget", "name": "online", "K": 3}
    assert described["uncharged_epsilon"] == "1/1"
    assert described["cap_rule"] == {"type": "ProspectiveCap", "name": "prospective", "violates": None}
    assert described["router"] == {"type": "FixedRouter", "reads_history": False, "reads_released_views": False}
    assert described["slots"][1] == {
        "slot": "food",
        "views": ["balanced-meals", "budget-friendly", "low-glycemic"],
        "generic": "balanced-meals",
        "sensitivity": "3/5",
    }
    assert [slot["slot"] for slot in described["slots"]] == ["finance", "food", "health", "schedule"]


def test_a_declared_charge_and_a_preallocated_plan_are_described_sorted() -> None:
    read = interface_description(declared_charge())["routes"][1]["reads"][0]
    assert read == {"slot": "health", "positions": [1], "charge": ["debt", "diabetes"]}
    budget = interface_description(preallocated())["budget"]
    assert json.dumps(budget, separators=(",", ":")) == (
        '{"type":"PreallocatedBudget","plan":[["debt",4],["diabetes",3]],"name":"preallocated"}'
    )


@pytest.mark.parametrize(
    ("interface", "fingerprint"),
    [
        (base, "641e3b1d3bf35736d9852166b73d43449a92b3bd14435ce7fdaab21e8538be2f"),
        (preallocated, "6601f4bc7e65f75513e4e22c0863aee1ffe75f373cc383ffa640852758703a5d"),
        (declared_charge, "a4e0e3d99e5011cceea70ef1977c026756606d3b3a9bd32c5d927bdf5779c4ef"),
    ],
    ids=["figure2", "preallocated", "declared-charge"],
)
def test_reference_fingerprints_are_pinned(interface: Callable[[], Interface], fingerprint: str) -> None:
    assert interface_fingerprint(interface()) == fingerprint


@attrs.frozen
class PerSlotSensitivity:
    """A scorer whose declared bound differs per slot (the protocol passes the vocabulary)."""

    inner: Any

    def scores(self, relevance: Any, vocabulary: Vocabulary, items: Any) -> Any:
        return self.inner.scores(relevance, vocabulary, items)

    def sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        return Fraction(len(vocabulary.slot), 10)

    def exact_sensitivity(self, vocabulary: Vocabulary) -> Fraction | None:
        return None


def test_each_slot_is_described_with_its_own_sensitivity() -> None:
    interface = attrs.evolve(base(), scorer=PerSlotSensitivity(base().scorer))
    described = interface_description(interface)["slots"]
    assert {slot["slot"]: slot["sensitivity"] for slot in described} == {
        "finance": "7/10",
        "food": "2/5",
        "health": "3/5",
        "schedule": "4/5",
    }
