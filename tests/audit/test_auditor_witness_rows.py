"""The witness as records (`witness_rows`) where the two stores' transcripts part: a slot
one store activates and the other does not, a view neither store can release, a turn one
store has not finished, and a router that reads the views released earlier in the turn.
The rows walk both stores along the witness and stop at the turn where it becomes
impossible under one of them (its step infinite)."""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction

import attrs

from dpmem_ref import (
    Attribute,
    FunctionScorer,
    Interface,
    Layout,
    MemoryItem,
    OnlineBudget,
    Policy,
    Query,
    SlotRead,
    Store,
    View,
    Vocabulary,
)
from dpmem_ref.analysis.loss import Loss
from dpmem_ref.analysis.witness import WitnessTurn
from dpmem_ref.audit.record import WitnessRow, witness_rows
from dpmem_ref.core.transcript import PublicPrefix, TurnRecord
from dpmem_ref.parts.broken import PrivateHooks

LAYOUT = Layout(("g", "h", "k", "k"))
POLICY = Policy(
    LAYOUT, (Attribute("a", frozenset({1, 2, 3}), Fraction(3)), Attribute("b", frozenset({4}), Fraction(3, 2)))
)
RELEASED = "released"


def _vocabulary(slot: str) -> Vocabulary:
    return Vocabulary(slot, (View(f"{slot}.gen"), View(f"{slot}.v1")), f"{slot}.gen")


def _interface(**parts: object) -> Interface:
    """Slots g, h, k over positions 1, 2, 3-4; query q reads g at 1, h at 2, k at 3 (all
    charged to a: eps = 1 each, K = 3); the scores do not depend on memory, so two stores
    that run the same slot on the same read release it identically (step 0)."""
    return Interface(
        policy=POLICY,
        vocabularies=tuple(_vocabulary(s) for s in ("g", "h", "k")),
        queries=(
            Query(
                "q", "q", (SlotRead("g", frozenset({1})), SlotRead("h", frozenset({2})), SlotRead("k", frozenset({3})))
            ),
        ),
        scorer=FunctionScorer(lambda relevance, vocabulary, items: (Fraction(0), Fraction(1)), Fraction(1)),
        budget=OnlineBudget(K=3),
        **parts,  # type: ignore[arg-type]
    )


def _routed_by_position_4(query: Query, history: tuple[TurnRecord, ...], store: Store) -> tuple[str, ...]:
    """Memory-dependent activation (a C4 breach): the query's slots tagged at position 4."""
    return tuple(read.slot for read in query.reads if read.slot in store.items[3].tags)


ROUTED = _interface(hooks=PrivateHooks(routing=_routed_by_position_4))


def _store(*active: str) -> Store:
    return Store.from_mapping(LAYOUT, {4: MemoryItem(frozenset(active), "")}, name="+".join(active))


GK, HK, G = _store("g", "k"), _store("h", "k"), _store("g")


def _turn(*views: tuple[str, str], control_a: Hashable = None, control_b: Hashable = None) -> WitnessTurn:
    released = tuple((slot, RELEASED) for slot, _ in views)
    return WitnessTurn(
        "q", views, released if control_a is None else control_a, released if control_b is None else control_b
    )


def _kind(loss: Loss) -> str:
    return "0" if loss.is_zero else "inf" if loss.is_infinite else "finite" if loss.is_finite else "impossible"


def _summary(rows: tuple[WitnessRow, ...]) -> list[tuple[object, ...]]:
    """Per row: its slots (slot, view, steps both ways), its total both ways and ledgers."""
    return [
        (
            tuple((s.slot, s.view, _kind(s.step_ab), _kind(s.step_ba)) for s in row.slots),
            _kind(row.step_ab),
            _kind(row.step_ba),
            row.ledgers_after,
        )
        for row in rows
    ]


def _ledgers(a: int, b: int = 0) -> tuple[tuple[str, Fraction], ...]:
    return (("a", Fraction(a)), ("b", Fraction(b)))


def test_a_slot_only_the_numerator_activates_is_infinite_and_ends_the_witness() -> None:
    """A runs g then k, B only g: k has no counterpart under B (infinite both ways) and the
    witness stops after that turn though both stores finished it."""
    witness = [_turn(("g", "g.v1"), ("k", "k.v1"))] * 2
    rows = witness_rows(ROUTED, GK, G, witness)
    assert _summary(rows) == [((("g", "g.v1", "0", "0"), ("k", "k.v1", "inf", "inf")), "inf", "inf", _ledgers(2))]
    # The same walk with B as the numerator: its transcript (g alone) ends where A's goes on.
    rows = witness_rows(ROUTED, G, GK, witness, numerator="b")
    assert _summary(rows) == [((("g", "g.v1", "0", "0"), ("k", "k.v1", "inf", "inf")), "inf", "inf", _ledgers(2))]


def test_the_rows_end_where_the_numerator_runs_out_of_slots() -> None:
    """The witness names k after g, but the numerator (G) runs g alone: the row shows g only
    and the walk stops; with GK as the numerator the same witness shows both slots."""
    witness = [_turn(("g", "g.v1"), ("k", "k.v1"))] * 2
    assert _summary(witness_rows(ROUTED, G, GK, witness)) == [((("g", "g.v1", "0", "0"),), "0", "0", _ledgers(1))]
    assert _summary(witness_rows(ROUTED, GK, G, witness, numerator="b")) == [
        ((("g", "g.v1", "0", "0"),), "0", "0", _ledgers(1))
    ]


def test_a_turn_the_other_store_has_not_finished_ends_the_witness() -> None:
    """Numerator G releases g and is done; GK still owes k: no step is infinite yet, but the
    transcript cannot go on under both stores, so no second row follows."""
    witness = [_turn(("g", "g.v1"))] * 2
    assert _summary(witness_rows(ROUTED, G, GK, witness)) == [((("g", "g.v1", "0", "0"),), "0", "0", _ledgers(1))]
    assert _summary(witness_rows(ROUTED, GK, G, witness, numerator="b")) == [
        ((("g", "g.v1", "0", "0"),), "0", "0", _ledgers(1))
    ]


def test_slots_out_of_step_stay_infinite_until_the_stores_meet_again() -> None:
    """A runs g, k; B runs h, k. The other store does not release the numerator's view in a
    slot it is not at: the first slot differs (infinite), and so does the second, which the
    other store reaches only after its own first slot."""
    witness = [_turn(("g", "g.v1"), ("k", "k.v1"))]
    assert _summary(witness_rows(ROUTED, GK, HK, witness)) == [
        ((("g", "g.v1", "inf", "inf"), ("k", "k.v1", "inf", "inf")), "inf", "inf", _ledgers(2))
    ]
    assert _summary(witness_rows(ROUTED, HK, GK, witness, numerator="b")) == [
        ((("g", "g.v1", "inf", "inf"), ("k", "k.v1", "inf", "inf")), "inf", "inf", _ledgers(2))
    ]
    # A runs g, k; B runs k alone: k is where they meet again, released alike (step 0).
    only_k = _store("k")
    assert _summary(witness_rows(ROUTED, GK, only_k, witness)) == [
        ((("g", "g.v1", "inf", "inf"), ("k", "k.v1", "0", "0")), "inf", "inf", _ledgers(2))
    ]
    assert _summary(witness_rows(ROUTED, only_k, GK, witness, numerator="b")) == [
        ((("g", "g.v1", "inf", "inf"), ("k", "k.v1", "0", "0")), "inf", "inf", _ledgers(2))
    ]


def test_a_view_neither_store_can_release_is_infinite_both_ways_and_ends_the_witness() -> None:
    """The transcript is impossible under both stores from that view on: its turn is the last."""
    witness = [_turn(("g", "g.elsewhere"), ("k", "k.v1"))]
    expected = [((("g", "g.elsewhere", "inf", "inf"), ("k", "k.v1", "0", "0")), "inf", "inf", _ledgers(2))]
    assert _summary(witness_rows(ROUTED, GK, GK, witness)) == expected
    assert _summary(witness_rows(ROUTED, GK, GK, witness * 3)) == expected


@attrs.frozen
class _NarrowsAfterV1:
    """A public router (C4): slot k reads positions 3-4 (charged to a and b, eps 1/2) once g
    released g.v1 this turn, else position 3 alone (charged to a, eps 1)."""

    reads_history: bool = False
    reads_released_views: bool = True

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]:
        return ("g", "k")

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead:
        read = prefix.query.read_for(slot)
        if slot == "k" and ("g", "g.v1") in prefix.released:
            return attrs.evolve(read, positions=frozenset({3, 4}))
        return read

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        return ()


def test_both_stores_plan_on_the_view_the_witness_released() -> None:
    """Both stores follow g's released view into k's read (positions 3-4 after g.v1, 3 after
    g.gen): identical stores release k alike whichever view g released."""
    interface = _interface(router=_NarrowsAfterV1())
    for view, ledgers in (("g.v1", (("a", Fraction(3, 2)), ("b", Fraction(1, 2)))), ("g.gen", _ledgers(2))):
        rows = witness_rows(interface, GK, GK, [_turn(("g", view), ("k", "k.v1"))])
        assert _summary(rows) == [((("g", view, "0", "0"), ("k", "k.v1", "0", "0")), "0", "0", ledgers)]


@attrs.frozen
class _KAfterGo:
    """A public router (C4) that reads the history: slot k runs only on the first turn or
    after a turn whose control was "go"."""

    reads_history: bool = True
    reads_released_views: bool = False

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]:
        return ("g", "k") if not history or history[-1].control == "go" else ("g",)

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead:
        return prefix.query.read_for(slot)

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        return history[-1].control if history else None


def test_the_next_turn_is_planned_on_the_control_the_witness_records() -> None:
    """The history the rows walk holds each turn's control as the witness gives it: after
    a turn recorded "go" both stores run k again (the default control would have read
    (("g", "released"), ("k", "released")), and k would not run)."""
    interface = _interface(router=_KAfterGo())
    witness = [_turn(("g", "g.gen"), ("k", "k.gen"), control_a="go", control_b="go")] * 2
    both = (("g", "g.gen", "0", "0"), ("k", "k.gen", "0", "0"))
    assert _summary(witness_rows(interface, GK, GK, witness)) == [
        (both, "0", "0", _ledgers(2)),
        (both, "0", "0", _ledgers(3)),
    ]
