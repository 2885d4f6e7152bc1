"""Small interfaces shared by the kernel unit tests."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

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
