"""Branch coverage of the kernel inside the default test command.

A pytest plugin, loaded by `scripts/run_tests.sh` as `-p tests.kernel_coverage`. It runs
coverage.py (`[tool.coverage.run]` in pyproject.toml: branch coverage of `dpmem_ref`) in the
same pytest process as every other test, but traces only
- at the start, while it imports every kernel module once (module-level lines count as run,
  as under `coverage run`; pytest's collection of the test modules then runs untraced), and
- while the tests of `MEASURED`, less `UNMEASURED`, run: those that reach the kernel in
  process at a small cost under the tracer.
The rest (the other proofs, the evaluation's tests, and the files most expensive under the
tracer for what they add) runs with the tracer off, at plain speed. Each test runs once, in
one pytest process; the pytest summary stays the last line.

After the run the full table goes to `runs/kernel-coverage.txt`, the total is printed in the
terminal summary, and when `DPMEM_COVERAGE_FLOOR=1` (run_tests.sh sets it when it runs the
whole default selection) a total below `[tool.coverage.report] fail_under` fails the session
(exit 1, and "1 kernel coverage below floor" in the closing line).

`DPMEM_COVERAGE_CONTEXTS=1` records each test file as a coverage context (`coverage json
--show-contexts`): what each file adds, to re-choose `MEASURED`.
`DPMEM_COVERAGE=all` measures every test instead (the complete figure of
tools/mutation/REPORT.md; about twice the pytest CPU). The figures, the floor and every
uncovered branch with its reason are in tools/mutation/REPORT.md, "Kernel branch coverage".
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Generator
from pathlib import Path

import coverage
import pytest
from coverage.results import should_fail_under

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "runs" / "kernel-coverage.txt"

MEASURED: tuple[str, ...] = ("tests/", "proofs_as_tests/test_corollary1.py")
"""Node-id prefixes measured in the default command: the kernel's unit, contract, path, ledger,
runtime, serve, CLI and hygiene tests (in process they cost little under the tracer: their
time is in subprocesses and I/O), and the one proof that reaches branches they do not."""

UNMEASURED: tuple[str, ...] = (
    # The most expensive under the tracer for what they add given the rest: (extra CPU seconds
    # under the tracer; points of the total only they reach), from the per-file runs of
    # tools/mutation/REPORT.md, "How the measured tests were chosen".
    "tests/counterexamples/test_counterexamples.py",  # +12.4 s; +0.03
    # The Eq. (7) and sampler-law tests of tests/mechanism/test_em.py (200k draws; they were
    # test_kernel_mechanism.py); the file's likelihood and input tests are measured.
    *(
        f"tests/mechanism/test_em.py::{test}"
        for test in (
            "test_exact_distribution_matches_eq7_to_40_digits",
            "test_plan_slot_distribution_is_eq7_for_figure2_food_slot",
            "test_exact_sampler_passes_chi_square_over_200k_draws",
            "test_chi_square_rejects_a_wrong_distribution",
            "test_sampler_decisions_use_no_floats",
            "test_bernoulli_exp_minus_frequency",
            "test_seeded_source_reproduces_draws",
            "test_distribution_repr_hides_exponents",
        )
    ),  # +7.9 s; 0
    "tests/config/test_fuzz_config.py",  # +7.7 s; +0.26
    "tests/audit/test_auditor_components.py",  # +4.6 s; +0.04
    "tests/hygiene/test_hygiene_timing.py",  # +3.9 s; +0.37
    "tests/audit/test_auditor_cover.py",  # +3.8 s; 0
    "tests/audit/test_auditor_audit.py",  # +3.5 s; +0.20
    # The exact-sampler tests that were test_kernel_mutants_exact.py: +3.0 s; +0.17 (with the
    # parsing tests now in tests/core/test_rational.py, which is measured: it also holds the
    # printing tests, the only ones of decimal_text's refusal)
    "tests/mechanism/test_em_sampler.py",
    "tests/mechanism/test_bernoulli.py::test_bucketed_round_draws_a_member_only_in_a_shared_bucket",
    "tests/mechanism/test_em.py::test_the_uniform_proposal_serves_up_to_eight_views_or_a_spread_up_to_one",
    "tests/mechanism/test_sampler_exact.py",  # +2.7 s; +0.06
    "tests/config/test_toml_bounds.py",  # +2.1 s; +0.08
    "tests/hygiene/test_hygiene_secrets.py",  # +2.1 s; +0.16
    "tests/serve/test_serve_fuzz.py",  # +1.5 s; 0
    "tests/analysis/test_differential_engines.py",  # +1.5 s; 0
    "tests/analysis/test_differential_audit.py",  # +1.4 s; +0.10
    "tests/ledger/test_crash_safety.py",  # +1.0 s; 0 (forked crash workers would inherit the tracer)
    "tests/audit/test_auditor_check.py",  # +0.9 s; 0
    "tests/ledger/test_ledger_postgres.py",  # +0.8 s; +0.03 (the server is a subprocess)
    "tests/ledger/test_ledger_concurrency.py",  # +0.3 s; 0 (forked racers would inherit the tracer)
)
"""Files (or tests, by node id) under `MEASURED` that run with the tracer off. The other proofs (about 15 s under
the tracer, +0.01 points) and eval/tests (the evaluation, not the kernel) are not measured
either."""

BELOW_FLOOR = "kernel coverage below floor"


class BelowFloor:
    """The closing line's entry for a total under the floor (a report-like object: other
    plugins read every entry's __dict__)."""

    count_towards_summary = True

    def __init__(self, total: float) -> None:
        self.total = total


def measured(nodeid: str, everything: bool) -> bool:
    return everything or (nodeid.startswith(MEASURED) and not nodeid.startswith(UNMEASURED))


class KernelCoverage:
    def __init__(self, everything: bool, floor: bool) -> None:
        self.everything = everything
        self.floor = floor
        self.cov = coverage.Coverage(config_file=str(ROOT / "pyproject.toml"), data_file=str(ROOT / ".coverage"))
        self.cov.erase()
        self.on = False
        self.total: float | None = None
        self.failed = False
        self.contexts = os.environ.get("DPMEM_COVERAGE_CONTEXTS") == "1"

    def start(self) -> None:
        if not self.on:
            self.cov.start()
            self.on = True

    def stop(self) -> None:
        if self.on:
            self.cov.stop()
            self.on = False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
        if measured(item.nodeid, self.everything):
            self.start()
            if self.contexts:
                self.cov.switch_context(item.nodeid.split("::")[0])
        else:
            self.stop()
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, None, None]:
        yield
        self.stop()
        self.cov.save()
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        with REPORT.open("w") as out:
            try:
                self.total = self.cov.report(file=out)
            except coverage.exceptions.NoDataError:
                self.total = 0.0
        config = self.cov.config
        if self.floor and should_fail_under(self.total, config.fail_under, config.precision):
            self.failed = True
            session.testsfailed += 1

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.total is None:
            return
        config = self.cov.config
        scope = "every test" if self.everything else "the tests of tests/kernel_coverage.py MEASURED"
        terminalreporter.write_sep("-", "kernel branch coverage")
        terminalreporter.write_line(
            f"dpmem_ref: {self.total:.{config.precision}f}% (statements and branches), measured over {scope};"
            f" table: {REPORT.relative_to(ROOT)}"
        )
        if not self.floor:
            terminalreporter.write_line(f"floor {config.fail_under}% not enforced (DPMEM_COVERAGE_FLOOR is not 1)")
        elif self.failed:
            terminalreporter.write_line(
                f"FAIL: below the floor [tool.coverage.report] fail_under = {config.fail_under}%", red=True
            )
            terminalreporter.stats.setdefault(BELOW_FLOOR, []).append(BelowFloor(self.total))
        else:
            terminalreporter.write_line(f"floor {config.fail_under}%: met")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Start before any conftest or test module imports the kernel (module-level lines)."""
    mode = os.environ.get("DPMEM_COVERAGE", "kernel")
    if mode not in ("kernel", "all", "1"):
        raise pytest.UsageError(f"DPMEM_COVERAGE={mode!r}: expected kernel (default), all (or 1), or 0 (no plugin)")
    plugin = KernelCoverage(everything=mode in ("all", "1"), floor=os.environ.get("DPMEM_COVERAGE_FLOOR") == "1")
    early_config.pluginmanager.register(plugin, "kernel-coverage")
    plugin.start()
    import_kernel()
    if not plugin.everything:
        plugin.stop()  # collection (torch, the evaluation, Hypothesis) runs untraced; per test from here


def import_kernel() -> None:
    """Import every kernel module once, under the tracer: their module-level lines (imports,
    definitions) count as run, as they would under `coverage run`, without tracing pytest's
    collection of every test module and its heavy imports. A module whose optional extra is
    not installed (ImportError) stays as far as it got; `__main__` modules are not run."""
    import dpmem_ref

    for module in pkgutil.walk_packages(dpmem_ref.__path__, "dpmem_ref.", onerror=lambda name: None):
        if module.name.rsplit(".", 1)[-1] == "__main__":
            continue
        try:
            importlib.import_module(module.name)
        except ImportError:
            continue
