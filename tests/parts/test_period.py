"""Budget periods (dpmem_ref.parts.period): the period parses from its public text, k
periods compose to k x the bound (basic composition), and `dpmem audit --periods K`
prints that guarantee with its caveat in text and in JSON (validated by the schema)."""

from __future__ import annotations

import json
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.cli import main
from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.parts.period import CAVEAT, BudgetPeriod, ComposedGuarantee, composed_caps
from tests.schemas.test_json_schemas import validate

ROOT = Path(__file__).resolve().parents[2]
FIGURE2_REUSE = ROOT / "examples" / "figure2-reuse.toml"


@pytest.mark.parametrize(
    ("text", "length", "unit", "label"),
    [("30 days", 30, "days", "30 days"), ("1 week", 1, "weeks", "1 week"), (" 12 hours ", 12, "hours", "12 hours")],
)
def test_period_parses_its_public_text(text: str, length: int, unit: str, label: str) -> None:
    period = BudgetPeriod.parse(text)
    assert (period.length, period.unit, period.label) == (length, unit, label)


@pytest.mark.parametrize("text", ["30", "0 days", "30 fortnights", "thirty days", 30, "-1 days", "1000000 days"])
def test_bad_period_is_one_line_naming_the_field(text: object) -> None:
    with pytest.raises(InputError) as caught:
        BudgetPeriod.parse(text)
    assert str(caught.value).startswith('budget.period: expected a period such as "30 days" (hours, days or weeks)')


def test_k_periods_compose_to_k_times_the_bound() -> None:
    composed = ComposedGuarantee(12, BudgetPeriod(30, "days"), Fraction(2, 3))
    assert composed.composed == Fraction(8)
    assert composed.line("B_a") == f"12 periods of 30 days: 12 x B_a = 12 x 2/3 = 8 ({CAVEAT})"
    assert composed_caps({"a": Fraction(2), "b": Fraction(1, 2)}, 3) == {"a": Fraction(6), "b": Fraction(3, 2)}
    with pytest.raises(InputError):
        ComposedGuarantee(0, None, Fraction(1))


def test_config_reads_the_period_from_the_budget_table() -> None:
    loaded = load_interface_file(FIGURE2_REUSE)
    assert loaded.interface.period == BudgetPeriod(30, "days")
    with FIGURE2_REUSE.open("rb") as handle:
        data = tomllib.load(handle)
    data["budget"]["period"] = "soon"
    with pytest.raises(InputError) as caught:
        interface_from_dict(data)
    assert (
        str(caught.value) == "budget.period: expected a period such as \"30 days\" (hours, days or weeks), found 'soon'"
    )


def test_audit_prints_the_composed_guarantee(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["audit", str(FIGURE2_REUSE), "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "3"]
    assert main([*args, "--periods", "12"]) == 0
    text = capsys.readouterr().out
    (row,) = [line for line in text.splitlines() if line.lstrip().startswith("periods ")]
    assert "12 periods of 30 days: 12 x kappa = 12 x 2 = 24" in row and CAVEAT in row
    assert main([*args, "--periods", "12", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    validate("audit", document)
    assert document["periods"]["composed_bound"] == "24" and document["periods"]["per_period_bound"] == "2"
    assert main(args) == 0
    assert "periods" not in capsys.readouterr().out


def test_audit_refuses_a_bad_period_count_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["audit", str(FIGURE2_REUSE), "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "3"]
    assert main([*args, "--periods", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == "dpmem: error: --periods: expected a number of periods in 1..1000000, found 0"
