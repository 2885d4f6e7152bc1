"""`dpmem audit` verdicts a CI gate can trust and work refused before it starts:
contract violations, kappa = inf, what the early stop claims, every printed
digit proved, the witness replay to the same digits, the --max-states bounds."""

from __future__ import annotations

import json
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import mpmath
import pytest

from dpmem_ref.analysis import worst_case_loss
from dpmem_ref.audit.digits import certain, format_units, quantum_text
from dpmem_ref.audit.render import audit_json
from dpmem_ref.audit.verdict import audit
from dpmem_ref.cli import main
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIGURE2 = EXAMPLES / "figure2.toml"
EVALUATION = EXAMPLES / "evaluation.toml"
OMITS = EXAMPLES / "broken" / "charge-omits-diabetes.toml"


def run_json(capsys: pytest.CaptureFixture[str], path: Path, a: str, b: str, horizon: int) -> tuple[int, Any]:
    code = main(["audit", str(path), "--store-a", a, "--store-b", b, "--horizon", str(horizon), "--json"])
    return code, json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------- contract


def test_contract_violation_fails_the_gate_even_under_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    """An omitted charge (C2, as `dpmem check` reports) whose loss at T = 1 stays under B_a:
    the loss holds at T, but the audit exits 1 and says the bound is not guaranteed beyond T."""
    assert main(["check", str(OMITS)]) == 1
    capsys.readouterr()
    code, report = run_json(capsys, OMITS, "M", "M_no_diabetes", 1)
    assert report["holds"] is True and mpmath.mpf(report["worst_case_loss"]) < 2
    assert code == 1 and report["exit_code"] == 1
    assert report["contract"] == "violated" and report["verdict"] == "contract violated"
    assert "not guaranteed beyond the audited horizon T = 1" in report["guarantee"]
    assert [v["code"] for v in report["contract_violations"]] == ["C2.charge_omits_attribute"]
    assert main(["audit", str(OMITS), "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "1"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED" in out and "not guaranteed beyond the audited horizon" in out


def test_compliant_file_holds_with_contract_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_json(capsys, FIGURE2, "M", "M_no_diabetes", 4)
    assert code == 0 and report["contract"] == "ok" and report["verdict"] == "holds" and report["exit_code"] == 0


# ---------------------------------------------------------------- early stop


@pytest.mark.parametrize(("a", "b"), [("M", "M_no_diabetes"), ("M", "neutral"), ("M_no_debt", "M")])
def test_early_stop_claims_only_this_horizon(a: str, b: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`fixed_point` = r proves loss(T) = loss(r), which is checked here; the text claims
    nothing beyond T (the state graph is built to depth T - 1 only)."""
    from dpmem_ref.analysis.ledger import LedgerSearch
    from dpmem_ref.analysis.loss import IV_DPS
    from dpmem_ref.mechanism.em import iv_precision

    loaded = load_interface_file(FIGURE2)
    interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)

    def iterated(horizon: int) -> tuple[Any, int | None]:
        with iv_precision(IV_DPS):
            search = LedgerSearch(interface, store_a, store_b, horizon, interface.queries, False, 10**6)
            search.all_horizons = True  # the value iteration with its early stop, not the one pass
            ab, _, ba, _ = search.run()
        return (ab, ba), search.fixed_point

    at_t, stop = iterated(12)
    assert stop is not None and stop < 12
    at_r, _ = iterated(stop)
    assert at_t == at_r
    from dpmem_ref.audit.render import audit_text

    report = audit(loaded, a, b, 12)
    text = audit_text(attrs.evolve(report, result=attrs.evolve(report.result, fixed_point=stop)))
    assert "nothing is claimed beyond T" in text and "every longer horizon" not in text


# ---------------------------------------------------------------- digits


def test_certain_prints_only_digits_both_ends_share() -> None:
    assert certain(Fraction(12344, 100000), Fraction(12346, 100000), 50).text() == "0.123"
    assert certain(Fraction(2, 3), Fraction(2, 3), 5).text() == "0.66667"
    assert certain(Fraction(-1, 10**70), Fraction(1, 10**70), 50).text() == "0e-69"  # no digit proved, but |x| < 1e-69 / 2
    assert certain(Fraction(999, 1000), Fraction(1001, 1000), 50).text() == "1.00"
    assert format_units(31, -302) == "3.1e-301" and quantum_text(Fraction(314159, 10**5), -2) == "3.14"
    for lo, hi in ((Fraction(1, 7), Fraction(1, 7) + Fraction(1, 10**30)), (Fraction(-5, 3), Fraction(-5, 3))):
        found = certain(lo, hi, 50)
        quantum = Fraction(10) ** found.exponent
        # every point of the enclosure rounds to the printed value
        assert abs(lo - found.units * quantum) <= quantum / 2 and abs(hi - found.units * quantum) <= quantum / 2


def _tiny_cap(exponent: int) -> Any:
    """Figure 2 with B_diabetes = 10^-exponent. Built on the parsed file (a config string
    holds at most 200 digits, limits.py), so the kernel's exact caps take any rational."""
    loaded = load_interface_file(FIGURE2)
    interface = loaded.interface
    attributes = tuple(
        attrs.evolve(a, cap=Fraction(1, 10**exponent)) if a.name == "diabetes" else a for a in interface.policy.attributes
    )
    return attrs.evolve(loaded, interface=attrs.evolve(interface, policy=attrs.evolve(interface.policy, attributes=attributes)))


@pytest.mark.parametrize("exponent", [20, 60, 200])
def test_tiny_caps_print_only_right_digits(exponent: int) -> None:
    """Caps of 1e-20, 1e-60, 1e-200: 50 significant digits, each equal to an independent
    computation's (the general search at exponent + 200 digits), and the witness replay
    printed at the same digits is the same text."""
    loaded = _tiny_cap(exponent)
    report = audit_json(audit(loaded, "M", "M_no_diabetes", 16))
    assert report["holds"] is True and report["enclosure_digits"] > 70
    reference = worst_case_loss(
        loaded.interface,
        loaded.store("M"),
        loaded.store("M_no_diabetes"),
        16,
        strict=False,
        search="general",
        dps=exponent + 200,
    )
    for key, direction in (("a_over_b", reference.a_over_b), ("b_over_a", reference.b_over_a)):
        text = report[key]["loss"]
        lo, hi = direction.value.ends()
        found = certain(lo, hi, 50)
        assert found.digits == 50
        assert text == found.text()  # the same 50 digits as the independent, far more precise run
    assert report["witness_replayed_loss"] == report["worst_case_loss"]
    mantissa = report["worst_case_loss"].split("e")[0].replace(".", "").lstrip("0")
    assert len(mantissa) == 50


def test_default_precision_is_kept_for_ordinary_losses() -> None:
    loaded = load_interface_file(FIGURE2)
    report = audit(loaded, "M", "M_no_diabetes", 8)
    assert report.dps == 70


# ---------------------------------------------------------------- --max-states


def test_max_states_is_refused_before_any_state_is_built_when_the_lower_bound_exceeds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dpmem_ref.analysis.ledger import LedgerSearch

    def never(self: object) -> None:
        raise AssertionError("the search ran although the lower bound exceeds --max-states")

    monkeypatch.setattr(LedgerSearch, "run", never)
    loaded = load_interface_file(EVALUATION)
    a, b = loaded.store("M_diabetes"), loaded.store("neutral")
    with pytest.raises(InputError, match=r"at least 4 ledger states .*--max-states 3; raise it to at least 4"):
        worst_case_loss(loaded.interface, a, b, 32, max_states=3)


def test_max_states_refusal_is_one_line_with_the_lower_bound(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["audit", str(EVALUATION), "--store-a", "M_diabetes", "--store-b", "neutral", "--horizon", "32"]
    started = time.process_time()
    assert main([*args, "--max-states", "3"]) == 2
    assert time.process_time() - started < 60  # generous: the point is no search ran (see above)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "at least 4 ledger states (a lower bound)" in err and "--max-states 3" in err


def test_estimate_bounds_the_states_the_programme_builds() -> None:
    """The estimate is an upper bound: the ledger programme never builds more ledger states."""
    from dpmem_ref.analysis.ledger import LedgerSearch
    from dpmem_ref.analysis.loss import IV_DPS
    from dpmem_ref.mechanism.em import iv_precision

    for path, pairs in (
        (FIGURE2, [("M", "M_no_diabetes"), ("M", "neutral"), ("M_no_debt", "M")]),
        (EVALUATION, [("M_diabetes", "neutral"), ("M_debt_and_job_loss", "neutral")]),
    ):
        loaded = load_interface_file(path)
        for a, b in pairs:
            for horizon in (2, 5, 16):
                with iv_precision(IV_DPS):
                    search = LedgerSearch(
                        loaded.interface, loaded.store(a), loaded.store(b), horizon, loaded.interface.queries, False, 10**6
                    )
                    ledger_states = search.estimate()
                    search.run()
                assert search.state_count <= ledger_states


# ---------------------------------------------------------------- z3 out of time


def test_z3_time_out_renders_in_text_and_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A z3 verdict "unproved" (budget spent) once crashed the text renderer."""
    import dpmem_ref.audit.check as check

    monkeypatch.setattr(check, "z3_deadline", lambda: time.monotonic_ns())  # no time left
    assert main(["check", str(FIGURE2)]) == 0
    out = capsys.readouterr().out
    assert "z3 ran out of time" in out and "internal error" not in out
    assert main(["check", str(FIGURE2), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {p["z3"] for p in report["sensitivity"]} == {"unproved"}
