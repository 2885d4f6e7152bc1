"""Every JSON output carries its schema and tool version, validates against the
JSON Schema shipped in the package (dpmem_ref/schemas), has structured controls and
violations, and `python -m counterexamples` shares the audit's witness record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from counterexamples.__main__ import main as counterexamples_main
from dpmem_ref.cli import main
from dpmem_ref.schemas import KINDS, SCHEMA_VERSION, envelope, schema, tool_version

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIGURE2 = EXAMPLES / "figure2.toml"


def validate(kind: str, document: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(schema(kind))
    jsonschema.Draft202012Validator(schema(kind)).validate(document)


def output(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> Any:
    assert main(argv) == code
    return json.loads(capsys.readouterr().out)


def test_every_kind_has_a_valid_shipped_schema() -> None:
    for kind in KINDS:
        jsonschema.Draft202012Validator.check_schema(schema(kind))
        assert envelope(kind) == {
            "schema": f"dpmem-{kind}",
            "schema_version": SCHEMA_VERSION,
            "tool": "dpmem-ref",
            "tool_version": tool_version(),
        }


@pytest.mark.parametrize(
    ("name", "code"), [("figure2.toml", 0), ("broken/charge-omits-diabetes.toml", 1), ("broken/no-cap.toml", 1)]
)
def test_check_json_validates(capsys: pytest.CaptureFixture[str], name: str, code: int) -> None:
    report = output(capsys, ["check", str(EXAMPLES / name), "--json"], code)
    validate("check", report)
    assert report["schema"] == "dpmem-check" and report["tool_version"] == tool_version()


def test_violations_are_structured(capsys: pytest.CaptureFixture[str]) -> None:
    report = output(capsys, ["check", str(EXAMPLES / "broken" / "charge-omits-diabetes.toml"), "--json"], 1)
    (violation,) = report["violations"]
    assert violation["condition"] == "C2" and violation["code"] == "C2.charge_omits_attribute"
    assert (violation["query"], violation["slot"], violation["attribute"]) == ("affordable-dinner", "food", "diabetes")
    assert violation["positions"] == [2, 3]  # the read positions inside I_diabetes
    assert "omits it" in violation["message"]
    part = output(capsys, ["check", str(EXAMPLES / "broken" / "no-cap.toml"), "--json"], 1)["violations"][0]
    assert part["query"] is None and part["positions"] == []  # a whole part, not one read


def test_sensitivity_counterexample_in_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    report = output(capsys, ["check", str(EXAMPLES / "broken" / "sensitivity-too-small.toml"), "--json"], 1)
    validate("check", report)
    health = next(p for p in report["sensitivity"] if p["slot"] == "health")
    assert (health["declared"], health["exact"], health["holds"]) == ("1/5", "3/5", False)
    assert health["counterexample"]["view"] == "blood-sugar-conscious" and health["counterexample"]["gap"] == "3/5"


@pytest.mark.parametrize(
    ("path", "a", "b", "code"),
    [
        (FIGURE2, "M", "M_no_diabetes", 0),
        (EXAMPLES / "broken" / "top-score-control.toml", "M", "M_no_diabetes", 1),
        (EXAMPLES / "evaluation.toml", "neutral", "neutral_non_runner", 3),
        (FIGURE2, "M", "M", 0),
    ],
)
def test_audit_json_validates(capsys: pytest.CaptureFixture[str], path: Path, a: str, b: str, code: int) -> None:
    report = output(capsys, ["audit", str(path), "--store-a", a, "--store-b", b, "--horizon", "4", "--json"], code)
    validate("audit", report)


def test_audit_controls_are_plain_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", str(FIGURE2), "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "8", "--json"]
    witness = output(capsys, argv)["witness"]
    assert witness[0]["control"] == [["food", "released"], ["finance", "released"]]
    assert ["food", "fallback"] in witness[-1]["control"]


def test_run_json_validates_with_structured_control(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", str(FIGURE2), "--store", "M", "--queries", str(EXAMPLES / "figure2-queries.txt")]
    report = output(capsys, [*argv, "--seed", "0", "--json", "--no-release-deadline"])
    validate("run", report)
    first = report["turns"][0]
    assert isinstance(first["control"], list) and first["control_repr"].startswith("((")


def test_counterexamples_json_validates_and_shares_the_witness_record(capsys: pytest.CaptureFixture[str]) -> None:
    assert counterexamples_main(["--json", "--only", "c2-incomplete-charging", "--only", "c6-evidence-control", "--only", "c4-slot-activation"]) == 0
    findings = json.loads(capsys.readouterr().out)
    validate("counterexample", findings)
    audit_turn = schema("audit")["$defs"]["witness_turn"]
    for finding in findings:
        for turn in finding["witness"]:
            jsonschema.Draft202012Validator(audit_turn | {"$defs": schema("audit")["$defs"]}).validate(turn)
