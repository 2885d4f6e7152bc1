"""Small interfaces, stores and parts shared by the kernel unit tests."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

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
from dpmem_ref.config.load import InterfaceFile, load_interface_file

ROOT = Path(__file__).resolve().parents[1]
FIGURE2 = ROOT / "examples" / "figure2.toml"


def figure2() -> InterfaceFile:
    return load_interface_file(FIGURE2)


def flag_scorer(sensitivity: Fraction = Fraction(1)) -> FunctionScorer:
    """u(v1) = 1{some read item carries 'flag'}, u(v0) = 1 - u(v1) (Appendix B.5 scores)."""

    def score(relevance, vocabulary, items):  # type: ignore[no-untyped-def]
        flag = any("flag" in item.tags for item in items)
        return tuple(Fraction(int(flag)) if v.name == "v1" else Fraction(int(not flag)) for v in vocabulary.views)

    return FunctionScorer(function=score, declared_sensitivity=sensitivity, name="flag")


def two_attribute_interface(**parts: object) -> tuple[Interface, Store, Store]:
    """Two slots, attributes a (positions 1, 2) and b (positions 2, 3); the read of slot s
    covers positions 1-2 and touches both groups. M and M' differ at position 1 (in I_a)."""
    layout = Layout(position_slots=("s", "s", "t"))
    policy = Policy(
        layout=layout,
        attributes=(
            Attribute("a", frozenset({1, 2}), Fraction(2)),
            Attribute("b", frozenset({2, 3}), Fraction(2)),
        ),
    )
    vocabularies = (
        Vocabulary(slot="s", views=(View("v0"), View("v1", compatible=frozenset({"flag"}))), generic="v0"),
        Vocabulary(slot="t", views=(View("v0"), View("v1")), generic="v0"),
    )
    charge = parts.pop("charge", None)
    queries = (
        Query(name="q", text="query", reads=(SlotRead(slot="s", positions=frozenset({1, 2}), charge=charge),)),  # type: ignore[arg-type]
        Query(name="r", text="other", reads=(SlotRead(slot="t", positions=frozenset({3})),)),
    )
    interface = Interface(
        policy=policy,
        vocabularies=vocabularies,
        queries=queries,
        scorer=parts.pop("scorer", flag_scorer()),  # type: ignore[arg-type]
        budget=OnlineBudget(K=3),
        **parts,  # type: ignore[arg-type]
    )
    store_m = Store.from_mapping(layout, {1: MemoryItem(tags=frozenset({"flag"}))}, name="M")
    store_m_prime = Store.from_mapping(layout, {}, name="M'")
    return interface, store_m, store_m_prime


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`dpmem ARGV` in process: (exit code, stdout, stderr)."""
    import contextlib
    import io

    from dpmem_ref.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = int(exit_.code) if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------------------------------
# The four-position policy of the behaviour tests: slot g over positions 1-3, slot h over
# position 4; attribute a guards I_a = {1, 2} (cap 1), b guards I_b = {2, 3} (cap 2).

FOUR_POSITION_LAYOUT = Layout(("g", "g", "g", "h"))
OVERLAPPING_POLICY = Policy(
    FOUR_POSITION_LAYOUT,
    (
        Attribute("a", frozenset({1, 2}), Fraction(1)),
        Attribute("b", frozenset({2, 3}), Fraction(2)),
    ),
)


def item(*tags: str) -> MemoryItem:
    """A memory item with these tags, its text the tags joined by spaces."""
    return MemoryItem(frozenset(tags), " ".join(tags))


def make_store(name: str = "M", **changes: MemoryItem) -> Store:
    """The store x, y, z, w over FOUR_POSITION_LAYOUT, with items changed by position (`p2=item("v")`)."""
    contents = {1: item("x"), 2: item("y"), 3: item("z"), 4: item("w")}
    contents.update({int(k[1:]): v for k, v in changes.items()})
    return Store.from_mapping(FOUR_POSITION_LAYOUT, contents, name)


XYZW_STORE = make_store()
"""One store object, `make_store()`: the kernel memoizes per store object."""


def interface_reading_1(budget=None, under_charged: bool = False) -> Interface:  # type: ignore[no-untyped-def]
    """OVERLAPPING_POLICY; query q reads slot g at position 1 (charged to a alone); scores
    (0, 1), sensitivity 1; OnlineBudget(K=2) unless `budget`. With `under_charged`, query
    `under` reads position 2 charged to a only (a C2 breach: position 2 is also in I_b)."""
    vocabularies = (
        Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen"),
        Vocabulary("h", (View("h.gen"), View("h.v1")), "h.gen"),
    )
    return Interface(
        policy=OVERLAPPING_POLICY,
        vocabularies=vocabularies,
        queries=(Query("q", "q", (SlotRead("g", frozenset({1})),)),)
        + ((Query("under", "under", (SlotRead("g", frozenset({2}), charge=frozenset({"a"})),)),) if under_charged else ()),
        scorer=FunctionScorer(lambda relevance, vocab, items: (Fraction(0), Fraction(1)), Fraction(1)),
        budget=budget or OnlineBudget(K=2),
    )


def interface_reading_1_3(router=None) -> Interface:  # type: ignore[no-untyped-def]
    """OVERLAPPING_POLICY; query q reads slot g at positions {1, 3} (charged to a and b);
    scores (0, 1), sensitivity 1; OnlineBudget(K=2); the given router, if any."""
    interface = Interface(
        policy=OVERLAPPING_POLICY,
        vocabularies=(
            Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen"),
            Vocabulary("h", (View("h.gen"), View("h.v1")), "h.gen"),
        ),
        queries=(Query("q", "q", (SlotRead("g", frozenset({1, 3})),)),),
        scorer=FunctionScorer(lambda relevance, vocab, items: (Fraction(0), Fraction(1)), Fraction(1)),
        budget=OnlineBudget(K=2),
    )
    return interface if router is None else attrs.evolve(interface, router=router)


class PrefixNarrowingRouter:
    """A public router (C4) whose read of slot g narrows with the prefix: position 1 alone
    after one turn of history, positions {1, 2} once a view was released this turn."""

    name = "prefix-narrowing"
    violates = None
    reads_history = True
    reads_released_views = True

    def active_slots(self, query, history):  # type: ignore[no-untyped-def]
        return tuple(read.slot for read in query.reads)

    def read(self, prefix, slot):  # type: ignore[no-untyped-def]
        read = prefix.query.read_for(slot)
        if prefix.history:
            return attrs.evolve(read, positions=frozenset({1}))
        if prefix.released:
            return attrs.evolve(read, positions=frozenset({1, 2}))
        return read

    def state_key(self, history):  # type: ignore[no-untyped-def]
        return len(history)


class ScriptedSource:
    """A RandomSource whose randbelow returns scripted integers and records the bounds."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)
        self.bounds: list[int] = []

    def randbelow(self, n: int) -> int:
        self.bounds.append(n)
        return self.values.pop(0)
