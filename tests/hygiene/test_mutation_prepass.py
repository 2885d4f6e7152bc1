"""The mutation pre-pass (tools/mutation/prepass.py) books a kill only when a test fails under the
mutant and passes without it, picks the cheapest tests mutmut maps to the function, and writes
its kills into mutmut's cache only where mutmut holds no verdict. Run on a small `mutants/`
folder of its own: a module whose behaviour follows MUTANT_UNDER_TEST, as mutmut's trampolines
do, and real pytest runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.mutation_tools import load_tool

prepass = load_tool("prepass")

MODULE = """
import os


def double(x):
    factor = 3 if os.environ.get("MUTANT_UNDER_TEST") == "pkg.x_double__mutmut_1" else 2
    return x * factor  # mutant 2 changes nothing a test can see


def other(x):
    return x


def spin(x):
    while os.environ.get("MUTANT_UNDER_TEST") == "pkg.x_spin__mutmut_1":
        pass  # the mutant hangs
    return x


def at_import():
    if os.environ.get("MUTANT_UNDER_TEST") == "pkg.x_at_import__mutmut_1":
        raise RuntimeError("mutated")
    return 1
"""
TESTS = """
from pkg import double, other


def test_double():
    assert double(2) == 4


def test_zero():
    assert double(0) == 0


def test_broken_on_its_own():
    assert other(1) == 2
"""


IMPORTED = """
from pkg import at_import

ONE = at_import()  # called as the module is imported


def test_one():
    assert ONE == 1
"""


def _mutants(tmp_path: Path) -> Path:
    mutants = tmp_path / "mutants"
    (mutants / "tests").mkdir(parents=True)
    (mutants / "pkg.py").write_text(MODULE)
    (mutants / "tests" / "test_pkg.py").write_text(TESTS)
    (mutants / "tests" / "test_imported.py").write_text(IMPORTED)
    (mutants / "pyproject.toml").write_text(
        '[tool.mutmut]\npytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]\n'
    )
    ids = {name: f"tests/test_pkg.py::{name}" for name in ("test_double", "test_zero", "test_broken_on_its_own")}
    stats = {
        "tests_by_mangled_function_name": {
            "pkg.x_double": [ids["test_zero"], ids["test_double"]],
            "pkg.x_other": [ids["test_broken_on_its_own"]],
            "pkg.x_at_import": ["tests/test_imported.py::test_one"],
        },
        "duration_by_test": {
            ids["test_zero"]: 0.1,
            ids["test_double"]: 0.2,
            ids["test_broken_on_its_own"]: 0.1,
            "tests/test_imported.py::test_one": 0.1,
        },
    }
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    meta = {
        "exit_code_by_key": {
            "pkg.x_double__mutmut_1": None,
            "pkg.x_double__mutmut_2": None,
            "pkg.x_other__mutmut_1": None,
            "pkg.x_at_import__mutmut_1": None,
            "pkg.x_at_import__mutmut_2": None,
            "pkg.x_double__mutmut_3": 0,  # mutmut's own survivor: never overwritten
        },
        "hash_by_function_name": {},
    }
    (mutants / "pkg.py.meta").write_text(json.dumps(meta))
    return mutants


@pytest.mark.parametrize("fork", [False, True], ids=["fresh-process", "fork-server"])
def test_a_kill_is_booked_only_when_the_failing_test_passes_without_the_mutant(tmp_path: Path, fork: bool) -> None:
    mutants = _mutants(tmp_path)
    killed, tried = prepass.run(mutants, ["pkg.*"], budget_s=10.0, jobs=2, deadline_s=600.0, fork=fork)
    assert (killed, tried) == (2, 5)
    # x_double__mutmut_1 fails test_double; mutant 2 passes every test; x_other's only test fails
    # without any mutant too, so its failure is no kill; x_at_import__mutmut_1 makes its test
    # module fail to import (collected without it), its mutant 2 changes nothing.
    assert json.loads((mutants / "prepass.json").read_text()) == {
        "pkg.x_at_import__mutmut_1": "collection of tests/test_imported.py",
        "pkg.x_double__mutmut_1": "tests/test_pkg.py::test_double",
    }
    # The kills are kept; the three tried without a verdict are not tried again on the same code
    # and tests, until mutmut's hash of their function changes or another test reaches it.
    assert prepass.run(mutants, ["pkg.*"], budget_s=10.0, jobs=1, deadline_s=600.0, fork=fork) == (0, 0)
    assert sorted(json.loads((mutants / "prepass-tried.json").read_text())) == [
        "pkg.x_at_import__mutmut_2",
        "pkg.x_double__mutmut_2",
        "pkg.x_other__mutmut_1",
    ]
    meta = json.loads((mutants / "pkg.py.meta").read_text())
    meta["hash_by_function_name"] = {"x_double": "edited"}
    (mutants / "pkg.py.meta").write_text(json.dumps(meta))
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    stats["tests_by_mangled_function_name"]["pkg.x_other"].append("tests/test_pkg.py::test_zero")
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    assert prepass.run(mutants, ["pkg.*"], budget_s=10.0, jobs=1, deadline_s=600.0, fork=fork) == (0, 2)
    (mutants / "prepass.json").unlink()
    (mutants / "tests" / "test_imported.py").write_text(
        IMPORTED.replace("ONE = at_import()", "ONE = at_import() + nope")
    )
    (mutants / "prepass-tried.json").unlink()
    assert prepass.run(mutants, ["pkg.x_at_import*"], budget_s=10.0, jobs=1, deadline_s=600.0) == (
        0,
        2,
    )  # no clean collection


def test_kills_are_written_only_where_mutmut_holds_no_verdict(tmp_path: Path) -> None:
    mutants = _mutants(tmp_path)
    (mutants / "prepass.json").write_text(
        json.dumps({"pkg.x_double__mutmut_1": "tests/test_pkg.py::test_double", "pkg.x_double__mutmut_3": "t"})
    )
    assert prepass.apply(mutants) == 1
    codes = json.loads((mutants / "pkg.py.meta").read_text())["exit_code_by_key"]
    assert codes == {
        "pkg.x_double__mutmut_1": 1,
        "pkg.x_double__mutmut_2": None,
        "pkg.x_other__mutmut_1": None,
        "pkg.x_at_import__mutmut_1": None,
        "pkg.x_at_import__mutmut_2": None,
        "pkg.x_double__mutmut_3": 0,
    }
    assert prepass.apply(mutants) == 0  # applied once


def test_the_cheapest_tests_within_the_budget_and_at_least_one() -> None:
    durations = {"a": 5.0, "b": 1.0, "c": 2.0, "d": 30.0}
    assert prepass.cheapest_tests(["a", "b", "c", "d", "new"], durations, 8.0) == ["b", "c", "a"]
    assert prepass.cheapest_tests(["a", "b", "c", "d"], durations, 7.9) == ["b", "c"]
    assert prepass.cheapest_tests(["d"], durations, 1.0) == ["d"]  # one, even above the budget
    assert prepass.cheapest_tests(["new"], durations, 1.0) == []  # no stats: left to mutmut


def _recorded_runs(monkeypatch) -> list[tuple[str | None, list[str]]]:
    """Each pytest run of the pre-pass, as (mutant or None, tests), in order; the runs still happen."""
    runs: list[tuple[str | None, list[str]]] = []
    real = prepass._pytest

    def recorded(mutants_: Path, args: list[str], tests: list[str], mutant: str | None, timeout_s: float):
        runs.append((mutant, list(tests)))
        return real(mutants_, args, tests, mutant, timeout_s)

    monkeypatch.setattr(prepass, "_pytest", recorded)
    return runs


def test_tests_that_reach_the_function_only_through_a_child_process_come_last() -> None:
    durations = {"child-a": 0.0, "child-b": 0.01, "direct": 2.0, "direct-dear": 5.0}
    tests = ["child-a", "child-b", "direct", "direct-dear"]
    assert prepass.cheapest_tests(tests, durations, 3.0, through_a_child=["child-a", "child-b"]) == ["direct"]
    assert prepass.cheapest_tests(tests, durations, 8.0, ["child-a", "child-b"]) == [
        "direct",
        "direct-dear",
        "child-a",
        "child-b",
    ]
    assert prepass.cheapest_tests(["child-a", "child-b"], durations, 1.0, ["child-a", "child-b"]) == [
        "child-a",
        "child-b",
    ]
    assert prepass.cheapest_tests(tests, durations, 3.0) == ["child-a", "child-b", "direct"]  # no edges recorded


def test_the_run_reads_the_child_process_edges_beside_mutmuts_stats(tmp_path: Path, monkeypatch) -> None:
    mutants = _mutants(tmp_path)
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    zero, double = "tests/test_pkg.py::test_zero", "tests/test_pkg.py::test_double"
    stats["duration_by_test"][double] = 0.05  # the cheaper of the two, by its recorded call time
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    (mutants / "subprocess-reach.json").write_text(json.dumps({"pkg.x_double": [double]}))
    runs = _recorded_runs(monkeypatch)
    prepass.run(mutants, ["pkg.x_double__mutmut_1"], budget_s=10.0, jobs=1, deadline_s=600.0)
    assert runs[0] == ("pkg.x_double__mutmut_1", [zero, double])  # the child-process test after the direct one


def test_the_failing_test_is_read_from_the_short_summary() -> None:
    tests = ["tests/a.py::test_b[x - y]", "tests/a.py::test_b[x", "tests/c.py::d"]
    output = "x\nFAILED tests/a.py::test_b[x - y] - AssertionError: no\nERROR tests/c.py::d\n"
    assert prepass._failed_test(output, tests) == "tests/a.py::test_b[x - y]"  # the id holds " - "
    assert prepass._failed_test("ERROR tests/c.py::d - fixture\n", tests) == "tests/c.py::d"
    assert prepass._failed_test("FAILED tests/c.py::d\n", tests) == "tests/c.py::d"  # no message
    assert prepass._failed_test("FAILED tests/e.py::f - x\n", tests) is None  # not a selected test
    assert prepass._failed_test("1 passed\n", tests) is None
    captured = "ERROR    dpmem.serve:gate.py:12 internal error ValueError at a.py:3 (f)\n"  # a captured log record
    assert prepass._failed_test(captured + "FAILED tests/c.py::d - assert 500 == 200\n", tests) == "tests/c.py::d"


def test_the_tests_that_killed_a_sibling_mutant_run_first_on_their_own(tmp_path: Path, monkeypatch) -> None:
    mutants = _mutants(tmp_path)
    module = (mutants / "pkg.py").read_text()
    (mutants / "pkg.py").write_text(
        module.replace('== "pkg.x_double__mutmut_1"', 'in ("pkg.x_double__mutmut_1", "pkg.x_double__mutmut_2")')
    )
    runs = _recorded_runs(monkeypatch)
    zero, double = "tests/test_pkg.py::test_zero", "tests/test_pkg.py::test_double"
    assert prepass.run(mutants, ["pkg.x_double*"], budget_s=10.0, jobs=1, deadline_s=600.0) == (2, 2)
    # mutant 1: both cheapest tests (test_zero passes, test_double fails), then test_double
    # without the mutant; mutant 2: test_double alone first, and it is already confirmed.
    assert runs == [
        ("pkg.x_double__mutmut_1", [zero, double]),
        (None, [double]),
        ("pkg.x_double__mutmut_2", [double]),
    ]
    # An earlier pass's kills are hints too; a hint that passes leaves the rest of the tests to run.
    (mutants / "pkg.py").write_text(module.replace('"pkg.x_double__mutmut_1"', '"pkg.x_double__mutmut_4"'))
    meta = json.loads((mutants / "pkg.py.meta").read_text())
    meta["exit_code_by_key"]["pkg.x_double__mutmut_4"] = None
    (mutants / "pkg.py.meta").write_text(json.dumps(meta))
    runs.clear()
    assert prepass.run(mutants, ["pkg.x_double*"], budget_s=10.0, jobs=1, deadline_s=600.0) == (1, 1)
    assert runs == [("pkg.x_double__mutmut_4", [double]), (None, [double])]
    runs.clear()
    (mutants / "prepass.json").write_text(json.dumps({"pkg.x_double__mutmut_1": zero}))
    meta["exit_code_by_key"]["pkg.x_double__mutmut_4"] = None
    (mutants / "pkg.py.meta").write_text(json.dumps(meta))
    assert prepass.run(mutants, ["pkg.x_double__mutmut_4"], budget_s=10.0, jobs=1, deadline_s=600.0) == (1, 1)
    assert runs == [("pkg.x_double__mutmut_4", [zero]), ("pkg.x_double__mutmut_4", [double]), (None, [double])]


def test_a_hint_runs_first_beyond_the_budget_and_only_for_the_functions_it_reaches(tmp_path: Path, monkeypatch) -> None:
    mutants = _mutants(tmp_path)
    zero, double, broken = (
        f"tests/test_pkg.py::{name}" for name in ("test_zero", "test_double", "test_broken_on_its_own")
    )
    runs = _recorded_runs(monkeypatch)
    # budget 0.1 s: test_zero alone is among the cheapest; test_double, the killer, is only a hint.
    assert prepass.run(mutants, ["pkg.x_double__mutmut_1"], budget_s=0.1, jobs=1, deadline_s=600.0) == (0, 1)
    assert runs == [("pkg.x_double__mutmut_1", [zero])]
    runs.clear()
    # broken reaches no x_double function: never run. The hint changes the tests tried, so the
    # mutant tried without a verdict before is tried again.
    hints = [broken, double]
    found = prepass.run(mutants, ["pkg.x_double__mutmut_1"], budget_s=0.1, jobs=1, deadline_s=600.0, hints=hints)
    assert found == (1, 1)
    assert runs == [("pkg.x_double__mutmut_1", [double]), (None, [double])]
    assert json.loads((mutants / "prepass.json").read_text()) == {"pkg.x_double__mutmut_1": double}


def test_a_mutant_judged_equivalent_is_not_tried(tmp_path: Path, monkeypatch, capsys) -> None:
    mutants = _mutants(tmp_path)
    runs = _recorded_runs(monkeypatch)
    judged = {"pkg.x_double__mutmut_1": "a reason", "pkg.x_double__mutmut_2": "a reason"}
    assert prepass.run(mutants, ["pkg.x_double*"], budget_s=10.0, jobs=1, deadline_s=600.0, judged=judged) == (0, 0)
    assert runs == []
    assert "prepass: 2 mutants skipped: judged equivalent" in capsys.readouterr().out
    # Not booked as tried either: without the judgement it is tried (and its kill found).
    assert prepass.run(mutants, ["pkg.x_double*"], budget_s=10.0, jobs=1, deadline_s=600.0) == (1, 2)


def test_mutants_left_at_the_deadline_are_counted_as_not_tried(tmp_path: Path, capsys) -> None:
    mutants = _mutants(tmp_path)
    assert prepass.run(mutants, ["pkg.*"], budget_s=10.0, jobs=2, deadline_s=0.0) == (0, 0)
    out = capsys.readouterr().out
    assert "no verdict" not in out
    assert out.splitlines()[-1] == "prepass: deadline reached, 5 mutants not tried"
    assert not (mutants / "prepass.json").exists()


def test_a_forked_run_reports_its_exit_code_and_is_killed_at_its_time_out(tmp_path: Path) -> None:
    out = os.open(tmp_path / "out", os.O_RDWR | os.O_CREAT)

    def failing(command: list[str]) -> int:
        print("ran", command, os.environ.get("MUTANT_UNDER_TEST"))
        return 1

    def hanging(command: list[str]) -> int:
        time.sleep(60)
        return 0

    def raising(command: list[str]) -> int:
        raise RuntimeError("inside pytest")

    before = os.environ.get("MUTANT_UNDER_TEST")
    assert prepass._forked(failing, ["-q"], "pkg.x_f__mutmut_1", 30.0, out) == 1
    assert (tmp_path / "out").read_text() == "ran ['-q'] pkg.x_f__mutmut_1\n"  # the mutant named in the child only
    assert os.environ.get("MUTANT_UNDER_TEST") == before
    started = time.monotonic()
    assert prepass._forked(hanging, [], None, 0.5, out) is None
    assert time.monotonic() - started < 10
    assert prepass._forked(raising, [], None, 30.0, out) == 3  # pytest's internal error: no verdict


def test_a_mutant_that_makes_its_tests_hang_is_a_kill_when_they_pass_without_it(tmp_path: Path, monkeypatch) -> None:
    mutants = _mutants(tmp_path)
    (mutants / "tests" / "test_spin.py").write_text(
        "from pkg import spin\n\n\ndef test_spin():\n    assert spin(3) == 3\n"
    )
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    stats["tests_by_mangled_function_name"]["pkg.x_spin"] = ["tests/test_spin.py::test_spin"]
    stats["duration_by_test"]["tests/test_spin.py::test_spin"] = 0.1
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    meta = json.loads((mutants / "pkg.py.meta").read_text())
    meta["exit_code_by_key"] = {"pkg.x_spin__mutmut_1": None, "pkg.x_spin__mutmut_2": None}
    (mutants / "pkg.py.meta").write_text(json.dumps(meta))
    monkeypatch.setattr(prepass, "TIMEOUT_S", 5.0)
    assert prepass.run(mutants, ["pkg.x_spin*"], budget_s=0.1, jobs=2, deadline_s=600.0, fork=True) == (1, 2)
    assert json.loads((mutants / "prepass.json").read_text()) == {
        "pkg.x_spin__mutmut_1": "time-out of tests/test_spin.py::test_spin"
    }
