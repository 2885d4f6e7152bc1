"""`dpmem check`: the static contract (C1-C6) and the Eq. (6) sensitivity proof."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import attrs
import pytest

from dpmem_ref import VIOLATION_CODES
from dpmem_ref.audit.check import check_interface
from dpmem_ref.audit.sensitivity import prove_linear_sensitivity, z3_verdict
from dpmem_ref.cli import main
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.parts.scoring import LinearTagScorer, LinearWeights

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# Each broken variant and the one condition `dpmem check` must name.
BROKEN = [
    ("charge-omits-diabetes.toml", "C2"),
    ("argmax.toml", "C3"),
    ("sensitivity-too-small.toml", "C3"),
    ("no-cap.toml", "C5"),
    ("raw-evidence-control.toml", "C6"),
    ("top-score-control.toml", "C6"),
]


@pytest.mark.parametrize("name", ["figure2.toml", "evaluation.toml"])
def test_shipped_examples_pass(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLES / name), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["violations"] == []
    # The envelope, and the sensitivity proofs the text prints.
    assert (report["schema"], report["schema_version"], report["tool"]) == ("dpmem-check", "1", "dpmem-ref")
    assert report["sensitivity"] and all(p["holds"] and p["z3"] == "proved" for p in report["sensitivity"])


@pytest.mark.parametrize(("name", "condition"), BROKEN)
def test_broken_variant_is_flagged_with_its_condition(
    name: str, condition: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(EXAMPLES / "broken" / name), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {"ok", "violations"} <= set(report)  # the stable keys (DESIGN.md); plus the envelope
    assert report["ok"] is False
    assert {v["condition"] for v in report["violations"]} == {condition}
    for violation in report["violations"]:
        assert set(violation) == {"condition", "code", "query", "slot", "attribute", "positions", "message"}
        # Machine-readable: "C2.charge_omits_attribute", a code from the kernel's registry.
        assert violation["code"] in VIOLATION_CODES and violation["code"].split(".")[0] == condition


def test_c2_message_names_query_slot_attribute() -> None:
    loaded = load_interface_file(EXAMPLES / "broken" / "charge-omits-diabetes.toml")
    (violation,) = check_interface(loaded.interface).violations
    assert violation.condition == "C2"
    assert violation.message == (
        "query affordable-dinner, slot food, attribute diabetes: "
        "read touches I_diabetes but the declared charge set omits it"
    )


def test_sensitivity_counterexample_is_reported() -> None:
    loaded = load_interface_file(EXAMPLES / "broken" / "sensitivity-too-small.toml")
    messages = {v.message for v in check_interface(loaded.interface).violations}
    assert (
        "query checkup-reminder, slot health, attribute diabetes: declared sensitivity 1/5 is below the true "
        "bound 3/5 (Eq. 6); counterexample for view blood-sugar-conscious: a read position in I_a holding tags "
        "[blood-sugar, medication] under M and [] under M' moves its score by 3/5"
    ) in messages
    assert len(messages) == 3  # food, finance and health are all charged slots


def test_eq6_is_checked_once_where_the_audit_proves_it() -> None:
    """The kernel's Eq. 6 comparison is left out (not filtered out) where the audit proves
    Eq. 6 itself: every other finding is the kernel's, in its order."""
    from dpmem_ref.contract import contract_violations, find_violations

    interface = load_interface_file(EXAMPLES / "broken" / "sensitivity-too-small.toml").interface
    kernel = contract_violations(interface)
    assert any(v.code == "C3.sensitivity_below_bound" for v in kernel)
    assert find_violations(interface, eq6=False) == [v for v in kernel if v.code != "C3.sensitivity_below_bound"]
    codes = [v.code for v in check_interface(interface).violations]
    assert codes.count("C3.sensitivity_below_bound") == 3  # one per charged slot, from the proof


def test_over_charging_is_allowed() -> None:
    """C2 asks Gamma >= Gamma*: a superset is sound (Definition 1)."""
    text = (EXAMPLES / "figure2.toml").read_text()
    loaded = load_interface_file(EXAMPLES / "figure2.toml")
    assert 'slot = "schedule"\npositions = [6]' in text
    schedule_read = attrs.evolve(loaded.interface.queries[2].reads[0], charge=frozenset({"debt"}))
    query = attrs.evolve(loaded.interface.queries[2], reads=(schedule_read,))
    interface = attrs.evolve(loaded.interface, queries=(*loaded.interface.queries[:2], query))
    assert check_interface(interface).ok


def test_read_across_slots_is_c4(tmp_path: Path) -> None:
    text = (EXAMPLES / "figure2.toml").read_text().replace("positions = [4, 5]", "positions = [4, 5, 6]")
    path = tmp_path / "c4.toml"
    path.write_text(text)
    violations = check_interface(load_interface_file(path).interface).violations
    assert [(v.condition, v.message) for v in violations] == [
        ("C4", "query affordable-dinner, slot finance: read set includes positions of other slots [6]")
    ]


@pytest.mark.parametrize(
    ("weights", "declared", "exact"),
    [
        (LinearWeights(), Fraction(3, 5), Fraction(3, 5)),  # the paper: 0.4 c + 0.2 s
        (LinearWeights(), Fraction(59, 100), Fraction(3, 5)),  # just below: refuted
        (LinearWeights(Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), Fraction(1, 2), Fraction(1, 2)),
        (LinearWeights(Fraction(0), Fraction(1, 2), Fraction(1, 2)), Fraction(9, 10), Fraction(1)),
    ],
)
def test_sensitivity_proof_is_tight(weights: LinearWeights, declared: Fraction, exact: Fraction) -> None:
    """The bound is proved at the true supremum and refuted just below it (z3 and exact)."""
    vocabulary = load_interface_file(EXAMPLES / "figure2.toml").interface.vocabulary("food")
    scorer = LinearTagScorer(weights=weights, declared_sensitivity=declared)
    proof = prove_linear_sensitivity(scorer, vocabulary)
    assert proof.exact == exact
    assert proof.holds is (declared >= exact)
    assert proof.z3 == ("proved" if declared >= exact else "refuted")
    if not proof.holds:
        assert proof.counterexample is not None and proof.counterexample.gap == exact
        verdict, found = z3_verdict(scorer, vocabulary, declared, exact)
        assert verdict == "refuted" and found is not None and found.gap > declared


def test_human_output_lists_violations(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLES / "broken" / "no-cap.toml")]) == 1
    out = capsys.readouterr().out
    assert "1 violation(s)" in out
    assert "  C5  cap rule 'none' does not keep L_a <= B_a on every path" in out


@pytest.mark.parametrize(("tags", "exact"), [({"specific": ["t"]}, Fraction(1, 5)), ({"compatible": ["t"]}, Fraction(2, 5)),
                                              ({"compatible": ["t"], "specific": ["u"]}, Fraction(3, 5))])
def test_sensitivity_counts_only_the_tag_kinds_a_view_has(tags: dict[str, list[str]], exact: Fraction) -> None:
    """Eq. (6): w_c [v has compatible tags] + w_s [v has specific tags]; a view with one kind
    of tag moves its score by that kind's weight only (exact argument, z3 and the counterexample)."""
    from dpmem_ref.config.load import interface_from_dict

    data = {
        "positions": ["x"],
        "attributes": {"a": {"group": [1], "cap": 2}},
        "budget": {"rule": "online", "K": 2},
        "scorer": {"kind": "linear", "weights": {"r": "2/5", "c": "2/5", "s": "1/5"}, "sensitivity": "3/5"},
        "slots": {"x": {"generic": "x-g", "views": {"x-g": {}, "x-t": tags}}},
        "queries": [{"name": "q", "reads": [{"slot": "x", "positions": [1]}]}],
        "stores": {"A": {"1": {"tags": ["t"]}}, "B": {}},
    }
    vocabulary = interface_from_dict(data).interface.vocabulary("x")
    for declared in (exact, exact - Fraction(1, 100)):
        proof = prove_linear_sensitivity(LinearTagScorer(weights=LinearWeights(), declared_sensitivity=declared), vocabulary)
        assert proof.exact == exact and proof.holds is (declared >= exact)
        assert proof.z3 == ("proved" if declared >= exact else "refuted")
        if not proof.holds:
            assert proof.counterexample is not None and proof.counterexample.view == "x-t"
            assert proof.counterexample.gap == exact


@pytest.mark.parametrize("declared", [Fraction(1, 10), Fraction(1, 4), Fraction(59, 100)])
def test_z3_counterexample_is_a_real_counterexample(declared: Fraction) -> None:
    """A refuting z3 model names a view of the slot and two tag sets whose scores, recomputed
    from the scorer's definition (c: any compatible tag; s: the share of specific tags;
    relevance cancels), differ by exactly the reported gap, above the declared bound."""
    vocabulary = load_interface_file(EXAMPLES / "figure2.toml").interface.vocabulary("food")
    scorer = LinearTagScorer(weights=LinearWeights(), declared_sensitivity=declared)
    exact = scorer.exact_sensitivity(vocabulary)
    verdict, found = z3_verdict(scorer, vocabulary, declared, exact)
    assert verdict == "refuted" and found is not None
    (view,) = [v for v in vocabulary.views if v.name == found.view]
    weights = LinearWeights()

    def score(tags: tuple[str, ...]) -> Fraction:
        present = set(tags)
        c = Fraction(1) if present & view.compatible else Fraction(0)
        s = Fraction(len(present & view.specific), len(view.specific)) if view.specific else Fraction(0)
        return weights.compatibility * c + weights.specificity * s

    assert set(found.tags_in_m) | set(found.tags_in_m_prime) <= view.compatible | view.specific
    assert abs(score(found.tags_in_m) - score(found.tags_in_m_prime)) == found.gap
    assert declared < found.gap <= exact


@pytest.mark.parametrize("declared", [Fraction(3, 5), Fraction(1, 5)])
def test_without_z3_the_exact_argument_alone_decides(declared: Fraction, monkeypatch: pytest.MonkeyPatch) -> None:
    """z3 missing (or not asked for): the verdict is "unavailable" and the exact argument
    (Eq. 6) alone says whether the declared bound holds, with its counterexample."""
    import sys

    vocabulary = load_interface_file(EXAMPLES / "figure2.toml").interface.vocabulary("food")
    scorer = LinearTagScorer(weights=LinearWeights(), declared_sensitivity=declared)
    asked_not = prove_linear_sensitivity(scorer, vocabulary, use_z3=False)
    monkeypatch.setitem(sys.modules, "z3", None)  # `import z3` raises ImportError
    assert z3_verdict(scorer, vocabulary, declared, Fraction(3, 5)) == ("unavailable", None)
    missing = prove_linear_sensitivity(scorer, vocabulary)
    for proof in (asked_not, missing):
        assert proof.z3 == "unavailable" and proof.exact == Fraction(3, 5)
        assert proof.holds is (declared >= Fraction(3, 5))
        assert (proof.counterexample is None) is proof.holds
