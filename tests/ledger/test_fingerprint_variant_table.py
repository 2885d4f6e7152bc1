"""The fingerprint's variant table is derived from the records.

`dpmem_ref.ledger.fingerprint` binds a ledger database to one interface. A hand-written
list of variants can miss a field; here the fields are walked: every (record, field) the
attrs walk reaches from the interface (and its nested parts) must be classified, either
as deciding a charge or its amount (then a change of that field alone must change the
fingerprint, and the changed interface must still pass the static contract check where
the change keeps it strict), or as exempt with the reason it decides no charge. A field
added to any record later fails `test_every_field_is_classified` until it is classified.

The same walk holds the persisted public records (TurnRecord, SlotRelease) to their
encodings: every field, changed alone, must change what is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import attrs
import pytest

from dpmem_ref import FixedRouter, OnlineBudget, PreallocatedBudget, ProspectiveCap, View
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.interface import Interface
from dpmem_ref.ledger import SlotRelease, encode_turn, interface_fingerprint
from dpmem_ref.ledger.codecs import release_values
from dpmem_ref.parts.broken import NoCap
from tests.kernel_fixtures import FIGURE2

Field = tuple[str, str]  # (record type name, field name)


def base() -> Interface:
    return load_interface_file(FIGURE2).interface


def preallocated() -> Interface:
    interface = base()
    return attrs.evolve(interface, budget=PreallocatedBudget.from_mapping({"diabetes": 3, "debt": 4}))


def declared_charge() -> Interface:
    return _with_read(base(), "checkup-reminder", 0, charge=frozenset({"diabetes", "debt"}))


BASES: dict[str, Callable[[], Interface]] = {
    "figure2": base,
    "preallocated": preallocated,
    "declared charge": declared_charge,
}


def walk(value: object) -> Iterator[Field]:
    """Every (record type, init field) reachable from `value` through attrs records,
    tuples, sets and mappings."""
    if attrs.has(type(value)):
        for field in attrs.fields(type(value)):  # type: ignore[misc]
            if field.init:
                yield type(value).__name__, field.name
                yield from walk(getattr(value, field.name))
    elif isinstance(value, tuple | list | frozenset | set):
        for item in value:
            yield from walk(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from walk(item)


# ------------------------------------------------------------------ changes of one field


def _policy(interface: Interface, **changes: Any) -> Interface:
    return attrs.evolve(interface, policy=attrs.evolve(interface.policy, **changes))


def _attribute(interface: Interface, which: str, /, **changes: Any) -> Interface:
    attributes = tuple(attrs.evolve(a, **changes) if a.name == which else a for a in interface.policy.attributes)
    return _policy(interface, attributes=attributes)


def _with_query(interface: Interface, which: str, /, **changes: Any) -> Interface:
    return attrs.evolve(interface, queries=tuple(attrs.evolve(q, **changes) if q.name == which else q for q in interface.queries))


def _with_read(interface: Interface, query: str, index: int, **changes: Any) -> Interface:
    reads = list(interface.query(query).reads)
    reads[index] = attrs.evolve(reads[index], **changes)
    return _with_query(interface, query, reads=tuple(reads))


def _with_vocabulary(interface: Interface, slot: str, **changes: Any) -> Interface:
    vocabularies = tuple(attrs.evolve(v, **changes) if v.slot == slot else v for v in interface.vocabularies)
    return attrs.evolve(interface, vocabularies=vocabularies)


def _renamed_attribute(interface: Interface) -> Interface:
    return _attribute(interface, "debt", name="money")


def _new_position(interface: Interface) -> Interface:
    layout = attrs.evolve(interface.policy.layout, position_slots=(*interface.policy.layout.position_slots, "schedule"))
    return _policy(interface, layout=layout)


def _renamed_view(interface: Interface) -> Interface:
    food = interface.vocabulary("food")
    views = tuple(attrs.evolve(v, name="low-gi") if v.name == "low-glycemic" else v for v in food.views)
    return _with_vocabulary(interface, "food", views=views)


def _swapped_vocabulary_slots(interface: Interface) -> Interface:
    """The health and schedule slots exchange their vocabularies (each vocabulary's slot
    field changes; view names, generics and sensitivities move with them)."""
    swap = {"health": "schedule", "schedule": "health"}
    vocabularies = tuple(attrs.evolve(v, slot=swap.get(v.slot, v.slot)) for v in interface.vocabularies)
    return attrs.evolve(interface, vocabularies=vocabularies)


def _moved_read(interface: Interface) -> Interface:
    """checkup-reminder reads the schedule slot instead of health (slot and positions)."""
    return _with_read(interface, "checkup-reminder", 0, slot="schedule", positions=frozenset({6}))


def _reordered_reads(interface: Interface) -> Interface:
    return _with_query(interface, "affordable-dinner", reads=tuple(reversed(interface.query("affordable-dinner").reads)))


def _plan(interface: Interface) -> Interface:
    return attrs.evolve(interface, budget=PreallocatedBudget.from_mapping({"diabetes": 3, "debt": 5}))


CHANGES: dict[Field, tuple[str, Callable[[Interface], Interface]]] = {
    ("Interface", "policy"): ("figure2", lambda i: _attribute(i, "diabetes", cap=Fraction(3))),
    ("Policy", "attributes"): (
        "figure2",
        lambda i: _policy(i, attributes=(*i.policy.attributes, attrs.evolve(i.policy.attributes[0], name="extra"))),
    ),
    ("Policy", "layout"): ("figure2", _new_position),
    ("Layout", "position_slots"): ("figure2", _new_position),
    ("Attribute", "name"): ("figure2", _renamed_attribute),
    ("Attribute", "group"): ("figure2", lambda i: _attribute(i, "diabetes", group=frozenset({1, 2}))),
    ("Attribute", "cap"): ("figure2", lambda i: _attribute(i, "debt", cap=Fraction(7))),
    ("Interface", "queries"): ("figure2", lambda i: attrs.evolve(i, queries=i.queries[:-1])),
    ("Query", "name"): ("figure2", lambda i: _with_query(i, "weeknight-plan", name="weeknight")),
    ("Query", "reads"): ("figure2", _reordered_reads),
    ("SlotRead", "slot"): ("figure2", _moved_read),
    ("SlotRead", "positions"): ("figure2", lambda i: _with_read(i, "affordable-dinner", 0, positions=frozenset({2}))),
    ("SlotRead", "charge"): (
        "declared charge",
        lambda i: _with_read(i, "checkup-reminder", 0, charge=frozenset({"diabetes"})),
    ),
    ("Interface", "vocabularies"): ("figure2", _swapped_vocabulary_slots),
    ("Vocabulary", "slot"): ("figure2", _swapped_vocabulary_slots),
    ("Vocabulary", "views"): (
        "figure2",
        lambda i: _with_vocabulary(i, "food", views=(*i.vocabulary("food").views, View(name="extra"))),
    ),
    ("Vocabulary", "generic"): ("figure2", lambda i: _with_vocabulary(i, "food", generic="low-glycemic")),
    ("View", "name"): ("figure2", _renamed_view),
    ("Interface", "budget"): ("figure2", lambda i: attrs.evolve(i, budget=OnlineBudget(K=4))),
    ("OnlineBudget", "K"): ("figure2", lambda i: attrs.evolve(i, budget=OnlineBudget(K=2))),
    ("OnlineBudget", "name"): ("figure2", lambda i: attrs.evolve(i, budget=attrs.evolve(i.budget, name="online-2"))),
    ("PreallocatedBudget", "plan"): ("preallocated", _plan),
    ("PreallocatedBudget", "name"): ("preallocated", lambda i: attrs.evolve(i, budget=attrs.evolve(i.budget, name="pre-2"))),
    ("Interface", "uncharged_epsilon"): ("figure2", lambda i: attrs.evolve(i, uncharged_epsilon=Fraction(1, 2))),
    ("Interface", "cap_rule"): ("figure2", lambda i: attrs.evolve(i, cap_rule=NoCap())),
    ("ProspectiveCap", "name"): ("figure2", lambda i: attrs.evolve(i, cap_rule=ProspectiveCap(name="prospective-2"))),
    ("ProspectiveCap", "violates"): ("figure2", lambda i: attrs.evolve(i, cap_rule=ProspectiveCap(violates="C5"))),
    ("Interface", "router"): ("figure2", lambda i: attrs.evolve(i, router=FixedRouter(reads_history=True))),
    ("FixedRouter", "reads_history"): ("figure2", lambda i: attrs.evolve(i, router=FixedRouter(reads_history=True))),
    ("FixedRouter", "reads_released_views"): (
        "figure2",
        lambda i: attrs.evolve(i, router=FixedRouter(reads_released_views=True)),
    ),
    ("Interface", "scorer"): ("figure2", lambda i: attrs.evolve(i, scorer=attrs.evolve(i.scorer, declared_sensitivity=Fraction(4, 5)))),
    ("LinearTagScorer", "declared_sensitivity"): (
        "figure2",
        lambda i: attrs.evolve(i, scorer=attrs.evolve(i.scorer, declared_sensitivity=Fraction(1))),
    ),
}

EXEMPT: dict[Field, str] = {
    ("Interface", "name"): "a label; the routes, groups and rules are fingerprinted",
    ("Interface", "selector"): "the strict kernel (DurableSession.open) admits only the EM selector (C3); it draws, never charges",
    ("ExponentialMechanismSelector", "name"): "see Interface.selector",
    ("ExponentialMechanismSelector", "violates"): "see Interface.selector",
    ("Interface", "control"): "a public observation (C6) after the releases: decides no charge or amount",
    ("FallbackControl", "name"): "see Interface.control",
    ("FallbackControl", "violates"): "see Interface.control",
    ("Interface", "hooks"): "private hooks break C1/C4/C5: the strict kernel refuses them before any ledger is opened",
    ("Interface", "reuse"): (
        "re-serves released views at no charge (post-processing, docs/reuse.md): every selection it does not skip "
        "is charged as fingerprinted, and a change of rules is a public decision that keeps B_a"
    ),
    ("ReusePolicy", "rules"): "see Interface.reuse",
    ("Interface", "period"): "when a deployment opens a new interaction (fresh ledgers); the caps of each are fingerprinted",
    ("PrivateHooks", "vocabulary"): "see Interface.hooks",
    ("PrivateHooks", "routing"): "see Interface.hooks",
    ("PrivateHooks", "fallback"): "see Interface.hooks",
    ("Query", "text"): "the query's public text; the route is identified by its name and reads",
    ("SlotRead", "relevance"): "public relevance scores (Eq. 5): change the release law, not a charge",
    ("View", "text"): "the view's text for the LLM (Eq. 2)",
    ("View", "compatible"): "score tags (Eq. 5): change the release law, not a charge",
    ("View", "specific"): "score tags (Eq. 5): change the release law, not a charge",
    ("LinearTagScorer", "weights"): "score weights (Eq. 5); the declared sensitivity Delta is fingerprinted",
    ("LinearWeights", "relevance"): "see LinearTagScorer.weights",
    ("LinearWeights", "compatibility"): "see LinearTagScorer.weights",
    ("LinearWeights", "specificity"): "see LinearTagScorer.weights",
}


def walked_fields() -> set[Field]:
    return {field for make in BASES.values() for field in walk(make())}


def test_every_field_is_classified() -> None:
    fields = walked_fields()
    unclassified = sorted(fields - set(CHANGES) - set(EXEMPT))
    assert not unclassified, f"classify these interface fields for the fingerprint: {unclassified}"
    stale = sorted((set(CHANGES) | set(EXEMPT)) - fields)
    assert not stale, f"classified fields that no base interface reaches: {stale}"
    assert not set(CHANGES) & set(EXEMPT)


@pytest.mark.parametrize("field", sorted(CHANGES), ids=lambda f: ".".join(f))
def test_a_change_of_any_charge_deciding_field_changes_the_fingerprint(field: Field) -> None:
    which, change = CHANGES[field]
    original = BASES[which]()
    changed = change(original)
    assert changed != original  # the change is real
    assert interface_fingerprint(changed) != interface_fingerprint(original), f"{'.'.join(field)} is not fingerprinted"
    assert interface_fingerprint(BASES[which]()) == interface_fingerprint(original)  # and the base is stable


@pytest.mark.parametrize("field", sorted(EXEMPT), ids=lambda f: ".".join(f))
def test_exempt_fields_have_a_reason(field: Field) -> None:
    assert len(EXEMPT[field]) > 10


def test_equal_interfaces_built_apart_have_equal_fingerprints() -> None:
    reordered = attrs.evolve(
        base(),
        queries=tuple(reversed(base().queries)),
        vocabularies=tuple(reversed(base().vocabularies)),
        policy=_policy(base(), attributes=tuple(reversed(base().policy.attributes))).policy,
        name="another label",
    )
    assert interface_fingerprint(reordered) == interface_fingerprint(base())


# ------------------------------------------------------------------ persisted records

TURN = TurnRecord(
    query="q",
    views=(("s", "v"),),
    control=(("s", "released"),),
    response="r",
    admitted=(True,),
    charges=(("s", frozenset({"a"}), Fraction(1, 3)),),
)
TURN_CHANGES: dict[str, object] = {
    "query": "q2",
    "views": (("s", "w"),),
    "control": (("s", "fallback"),),
    "response": "r2",
    "admitted": (False,),
    "charges": (("s", frozenset({"a"}), Fraction(2, 3)),),
}
RELEASE = SlotRelease(
    seq=1, release_id="ab", turn_id="cd", index=1, slot="s", view="v", admitted=True,
    charge_set=frozenset({"a"}), epsilon=Fraction(1, 3),
)  # fmt: skip
RELEASE_CHANGES: dict[str, object] = {
    "release_id": "ef",
    "turn_id": "01",
    "index": 2,
    "slot": "t",
    "view": "w",
    "admitted": False,
    "charge_set": frozenset({"a", "b"}),
    "epsilon": Fraction(2, 3),
}
RELEASE_NOT_BOUND = {"seq": "assigned by the database (the row's commit order)"}


def test_every_turn_record_field_is_persisted() -> None:
    names = {f.name for f in attrs.fields(TurnRecord) if f.init}
    assert names == set(TURN_CHANGES), f"add a change for every TurnRecord field: {sorted(names ^ set(TURN_CHANGES))}"
    for name, value in TURN_CHANGES.items():
        assert encode_turn(attrs.evolve(TURN, **{name: value})) != encode_turn(TURN), f"TurnRecord.{name} is not stored"


def test_every_release_row_field_is_bound() -> None:
    from dpmem_ref.ledger import SessionKey

    names = {f.name for f in attrs.fields(SlotRelease) if f.init}
    assert names == set(RELEASE_CHANGES) | set(RELEASE_NOT_BOUND), sorted(names ^ (set(RELEASE_CHANGES) | set(RELEASE_NOT_BOUND)))
    key = SessionKey(user="u", interaction="i")
    for name, value in RELEASE_CHANGES.items():
        changed = attrs.evolve(RELEASE, **{name: value})
        assert release_values(key, changed) != release_values(key, RELEASE), f"SlotRelease.{name} is not stored"
