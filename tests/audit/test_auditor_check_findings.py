"""`dpmem check` findings as an auditor reads them: where each Eq. (6) finding points (how many
more queries read the slot), the order of the findings, the scope of a whole-part finding,
the z3 column of the sensitivity proofs, and a scorer other than the linear one."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from dpmem_ref.audit.check import CheckReport, check_interface
from dpmem_ref.audit.render import check_text
from dpmem_ref.audit.sensitivity import SensitivityProof
from dpmem_ref.config.load import InterfaceFile, interface_from_dict
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.parts.selectors import ExponentialMechanismSelector

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _example(name: str) -> dict[str, Any]:
    with (EXAMPLES / name).open("rb") as handle:
        return tomllib.load(handle)


def _too_small_and_uncapped() -> InterfaceFile:
    """The sensitivity-too-small variant with no cap rule (C5), food read by two queries and
    health by three."""
    data = _example("broken/sensitivity-too-small.toml")
    data["deployment"]["enforce_cap"] = False
    data["queries"] += [
        {"name": "snack-idea", "reads": [{"slot": "food", "positions": [2]}]},
        {"name": "medication-check", "reads": [{"slot": "health", "positions": [1]}]},
        {"name": "sleep-advice", "reads": [{"slot": "health", "positions": [1]}]},
    ]
    return interface_from_dict(data, path="too-small-uncapped.toml")


def _finding(query: str, slot: str, attributes: str, view: str, tags: str) -> str:
    return (
        f"{query}, slot {slot}, attribute {attributes}: declared sensitivity 1/5 is below the true bound 3/5 "
        f"(Eq. 6); counterexample for view {view}: a read position in I_a holding tags [{tags}] under M and [] "
        "under M' moves its score by 3/5"
    )


def test_sensitivity_findings_count_the_other_queries_and_come_before_later_conditions() -> None:
    """A finding names the first query reading the slot and how many more do ("1 more query",
    "2 more queries"); the proved C3 findings are listed before the kernel's C5, in condition
    order, and the whole-part C5 names every charged slot."""
    loaded = _too_small_and_uncapped()
    report = check_interface(loaded.interface)
    assert check_text(loaded, report).splitlines() == [
        "check too-small-uncapped.toml: 4 violation(s)",
        "  C3  " + _finding("query affordable-dinner and 1 more query", "food", "debt, diabetes", "low-glycemic",
                            "blood-sugar, carb-counting"),
        "  C3  " + _finding("query affordable-dinner", "finance", "debt", "strict-budget",
                            "debt-repayment, tight-budget"),
        "  C3  " + _finding("query checkup-reminder and 2 more queries", "health", "diabetes",
                            "blood-sugar-conscious", "blood-sugar, medication"),
        "  C5  cap rule 'none' does not keep L_a <= B_a on every path (every charged selection: slots finance, food, "
        "health)",
        "  sensitivity, slot food: declared 1/5, true 3/5: too small (exact argument and z3)",
        "  sensitivity, slot finance: declared 1/5, true 3/5: too small (exact argument and z3)",
        "  sensitivity, slot health: declared 1/5, true 3/5: too small (exact argument and z3)",
    ]


def test_without_z3_every_proof_is_the_exact_argument_alone() -> None:
    """check_interface(use_z3=False), as the audit runs it: the same findings, each proof
    decided by the exact argument alone ("unavailable" z3 verdict)."""
    loaded = _too_small_and_uncapped()
    with_z3, without = check_interface(loaded.interface), check_interface(loaded.interface, use_z3=False)
    assert without.violations == with_z3.violations
    assert [p.z3 for p in with_z3.sensitivity] == ["refuted"] * 3
    assert [p.z3 for p in without.sensitivity] == ["unavailable"] * 3
    assert check_text(loaded, without).splitlines()[-3:] == [
        f"  sensitivity, slot {slot}: declared 1/5, true 3/5: too small (exact argument)"
        for slot in ("food", "finance", "health")
    ]


def test_whole_part_finding_without_charged_selections_names_no_slots() -> None:
    """No read touches a protected group: the C5 finding has no "(every charged selection: ...)"
    scope to name, and no sensitivity is proved."""
    data = _example("figure2.toml")
    data.setdefault("deployment", {})["enforce_cap"] = False
    data["queries"] = [q for q in data["queries"] if q["name"] == "weeknight-plan"]
    loaded = interface_from_dict(data, path="uncharged.toml")
    assert check_text(loaded, check_interface(loaded.interface)).splitlines() == [
        "check uncharged.toml: 1 violation(s)",
        "  C5  cap rule 'none' does not keep L_a <= B_a on every path",
    ]


@attrs.frozen
class _StatedBoundScorer:
    """A scorer other than the linear one whose form states its exact bound (3/5), above the
    declared 1/5."""

    name: str = "stated-bound"

    def scores(self, relevance: Mapping[str, Fraction], vocabulary: Vocabulary, items: tuple[Any, ...]) -> tuple[Fraction, ...]:
        return tuple(Fraction(0) for _ in vocabulary.views)

    def sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        return Fraction(1, 5)

    def exact_sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        return Fraction(3, 5)


def test_other_scorer_with_an_exact_bound_gets_the_kernels_eq6_findings() -> None:
    """Eq. (6) is proved here only for the linear scorer; for any other scorer whose form gives
    its exact bound, the kernel's comparison reports every charged read declared below it."""
    loaded = interface_from_dict(_example("figure2.toml"))
    report = check_interface(attrs.evolve(loaded.interface, scorer=_StatedBoundScorer()))
    assert report.sensitivity == ()
    assert [(v.code, v.message) for v in report.violations] == [
        (
            "C3.sensitivity_below_bound",
            f"query {query}, slot {slot}: declared sensitivity 1/5 is below the scorer's bound 3/5 (Eq. 6)",
        )
        for query, slot in (("affordable-dinner", "food"), ("affordable-dinner", "finance"),
                            ("checkup-reminder", "health"))
    ]


def test_part_naming_a_condition_outside_c1_c6_is_listed_last() -> None:
    """Findings are sorted by condition C1-C6; a third-party part labelled with any other
    condition is still reported, after them."""
    data = _example("figure2.toml")
    data.setdefault("deployment", {})["enforce_cap"] = False
    loaded = interface_from_dict(data)
    selector = attrs.evolve(ExponentialMechanismSelector(), violates="C9")
    report = check_interface(attrs.evolve(loaded.interface, selector=selector))
    assert [v.code for v in report.violations] == ["C5.cap_rule", "C9.selector_not_em"]


def test_z3_verdict_outside_the_known_ones_is_printed_as_given() -> None:
    """The z3 column names the method for the four verdicts and echoes any other one."""
    proof = SensitivityProof(slot="food", declared=Fraction(3, 5), exact=Fraction(3, 5), z3="skipped", counterexample=None)
    loaded = interface_from_dict(_example("figure2.toml"), path="figure2.toml")
    assert check_text(loaded, CheckReport(violations=(), sensitivity=(proof,))).splitlines() == [
        "check figure2.toml: ok, the contract C1-C6 holds",
        "  sensitivity, slot food: declared 3/5, true 3/5: holds (skipped)",
    ]
