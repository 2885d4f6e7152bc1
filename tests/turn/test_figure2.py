"""The paper's running example (Figure 2) through `dpmem run`: exact ledgers and fallback."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

from dpmem_ref import InterfaceState, SeededRandomSource, run_turn
from dpmem_ref.cli import main
from tests.kernel_fixtures import ROOT, figure2


def test_ten_affordable_dinner_queries_exact_ledgers_then_fallback() -> None:
    loaded = figure2()
    interface = loaded.interface
    state = InterfaceState.initial(interface)
    source = SeededRandomSource(0)
    trace = []
    for _ in range(10):
        result = run_turn(interface, state, "affordable-dinner", loaded.store("M"), source)
        state = result.state
        trace.append(result)
    food = [r.plans[0] for r in trace]
    # The food read {2, 3} touches both groups: every admitted food selection charges
    # eps = min(B_diabetes, B_debt) / K = 2/3 to both.
    assert food[0].admitted and food[0].charge_set == frozenset({"diabetes", "debt"}) and food[0].epsilon == Fraction(2, 3)
    diabetes = [r.state.ledger_map(interface)["diabetes"] for r in trace]
    debt = [r.state.ledger_map(interface)["debt"] for r in trace]
    assert diabetes[:3] == [Fraction(2, 3), Fraction(4, 3), Fraction(2)]  # 2/3 + 2/3 + 2/3 == 2, admitted
    assert debt[:3] == [Fraction(10, 3), Fraction(20, 3), Fraction(22, 3)]  # finance charges 8/3 = B_debt / K
    assert all(isinstance(v, Fraction) for v in debt + diabetes)
    # Turn 3: the finance selection would exceed B_debt; from turn 4 the food selection would
    # exceed B_diabetes: the generic view at zero cost, ledgers unchanged.
    assert [p.admitted for p in trace[2].plans] == [True, False]
    for result in trace[3:]:
        assert not any(p.admitted for p in result.plans)
        assert result.record.views == (("food", "balanced-meals"), ("finance", "finance-generic"))
    assert diabetes[-1] == Fraction(2) and debt[-1] == Fraction(22, 3)


def test_dpmem_run_prints_exact_ledgers(capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["run", str(ROOT / "examples/figure2.toml"), "--store", "M",
                 "--queries", str(ROOT / "examples/figure2-queries.txt"), "--seed", "0"])
    out = capsys.readouterr().out
    assert code == 0
    assert "charged 2/3 to debt, diabetes" in out
    assert "diabetes 2/3 of 2" in out and "diabetes 4/3 of 2" in out and "diabetes 2 of 2" in out
    assert "fallback, cost 0" in out
    assert "1.99" not in out and "0.666" not in out


def test_dpmem_run_json_and_console_script() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", "run", "examples/figure2.toml", "--store", "M",
         "--queries", "examples/figure2-queries.txt", "--seed", "0", "--json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    report = json.loads(completed.stdout)
    assert [t["ledgers"]["diabetes"] for t in report["turns"]][:4] == ["2/3", "4/3", "2", "2"]
    assert report["turns"][3]["slots"][0]["status"] == "fallback"


def test_dpmem_run_bad_store_is_one_line_exit_2() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", "run", "examples/figure2.toml", "--store", "nope",
         "--queries", "examples/figure2-queries.txt"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip().count("\n") == 0
    assert "store" in completed.stderr and "Traceback" not in completed.stderr
