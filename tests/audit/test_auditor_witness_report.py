"""The witness part of an audit report (dpmem_ref.audit.verdict.audit): its rows and pathwise
ledgers are the numerator store's, the replay agrees with the loss digit for digit, and a
witness impossible under the other store has no replayed loss ("inf")."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import attrs
import pytest

from dpmem_ref import PrivateHooks
from dpmem_ref.analysis.direction import LossDirection
from dpmem_ref.audit.numbers import loss_text, replayed_text
from dpmem_ref.audit.verdict import audit
from dpmem_ref.cli import main
from dpmem_ref.config.load import load_interface_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIGURE2 = EXAMPLES / "figure2.toml"


@pytest.mark.parametrize(
    ("path", "a", "b", "horizon"),
    [(FIGURE2, "M", "M_no_diabetes", 4), (FIGURE2, "M", "M_no_debt", 3), (EXAMPLES / "figure2-reuse.toml", "M", "neutral", 3)],
)
def test_pathwise_ledgers_and_replay_of_the_witness(path: Path, a: str, b: str, horizon: int) -> None:
    """L_a(omega) after every turn, by attribute name, as the witness rows show them; the
    replay, at 20 more digits than the search, prints the loss's proved digits exactly."""
    loaded = load_interface_file(path)
    report = audit(loaded, a, b, horizon)
    names = loaded.interface.policy.attribute_names
    assert report.attribute_names == names == ("diabetes", "debt")
    assert len(report.witness_ledgers) == len(report.rows) == horizon
    assert report.witness_ledgers == tuple(row.ledgers_after for row in report.rows)
    assert all(tuple(name for name, _ in turn) == names for turn in report.witness_ledgers)
    worst = report.result.worst.value
    assert report.replayed_loss is not None
    assert replayed_text(report.replayed_loss, worst) == loss_text(worst)
    lo, hi = worst.ends()
    assert lo <= report.replayed_loss <= hi


def test_figure2_witness_spends_the_diabetes_budget_turn_by_turn() -> None:
    report = audit(load_interface_file(FIGURE2), "M", "M_no_diabetes", 4)
    assert [dict(turn)["diabetes"] for turn in report.witness_ledgers] == [
        Fraction(2, 3),
        Fraction(4, 3),
        Fraction(2),
        Fraction(2),
    ]


def test_a_witness_impossible_under_the_other_store_has_no_replayed_loss(capsys: pytest.CaptureFixture[str]) -> None:
    """argmax: M releases a view M_no_debt never selects; the replay under M_no_debt is
    impossible, so there is no replayed value and the output says "inf"."""
    path = EXAMPLES / "broken" / "argmax.toml"
    report = audit(load_interface_file(path), "M", "M_no_debt", 3)
    assert loss_text(report.result.worst.value) == "inf" and report.replayed_loss is None
    args = ["audit", str(path), "--store-a", "M", "--store-b", "M_no_debt", "--horizon", "3"]
    assert main([*args, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["witness_replayed_loss"] == "inf"
    assert main(args) == 1
    assert "; replayed loss inf):" in capsys.readouterr().out


def test_the_witness_rows_are_the_numerator_stores(tmp_path: Path) -> None:
    """A score-reading fallback (C4 breach, private hook) with no control: M falls back on the
    health slot where M_no_diabetes runs its EM selection, so the worst case is M_no_diabetes
    over M (a view M never releases) and the rows show M_no_diabetes's plans and ledgers."""
    path = tmp_path / "fallback-hook.toml"
    path.write_text(FIGURE2.read_text().replace('control = "fallback"', 'control = "none"', 1))
    loaded = load_interface_file(path)
    hooked = attrs.evolve(loaded.interface, hooks=PrivateHooks(fallback=lambda scores: max(scores) > Fraction(1, 2)))
    report = audit(attrs.evolve(loaded, interface=hooked), "M", "M_no_diabetes", 2)
    assert report.result.direction is LossDirection.B_OVER_A
    assert loss_text(report.result.worst.value) == "inf" and report.replayed_loss is None
    health = report.rows[-1].slots[-1]
    assert (health.slot, health.view, health.release, health.charged) == (
        "health",
        "blood-sugar-conscious",
        "em",
        ("diabetes",),
    )
    assert dict(report.rows[-1].ledgers_after)["diabetes"] == Fraction(2, 3)
    assert report.witness_ledgers == tuple(row.ledgers_after for row in report.rows)
