"""`tools/mutation/scope.py round4` widens [tool.mutmut] to the round-4 scope: the kernel's modules
plus every module of round4-modules.txt, their test folders in the selection in place of the
single files they cover, the PostgreSQL tests no longer deselected, nothing else changed, and a
second run changes nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.mutation_tools import load_tool

ROOT = Path(__file__).resolve().parents[2]
scope = load_tool("scope")


def test_the_round4_scope_is_the_kernel_plus_the_listed_modules_and_their_test_folders() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    listing = (ROOT / "tools" / "mutation" / "round4-modules.txt").read_text()
    widened = scope.widened(pyproject, listing)
    before = tomllib.loads(pyproject)["tool"]["mutmut"]
    after = tomllib.loads(widened)["tool"]["mutmut"]
    listed = [line for line in listing.split() if line.endswith(".py") and line.startswith("dpmem_ref/")]
    assert listed and after["only_mutate"] == before["only_mutate"] + listed
    selection = after["pytest_add_cli_args_test_selection"]
    assert {"tests/ledger", "tests/audit", "tests/runtime", "tests/serve", "tests/cli"} <= set(selection)
    assert "tests/ledger/test_ledger_contract.py" not in selection
    assert set(before["pytest_add_cli_args_test_selection"]) - set(selection) == {
        "tests/ledger/test_ledger_contract.py",
        "tests/audit/test_auditor_audit.py",
    }
    changed = ("only_mutate", "pytest_add_cli_args_test_selection", "pytest_add_cli_args")
    assert {key: value for key, value in after.items() if key not in changed} == {
        key: value for key, value in before.items() if key not in changed
    }
    # the PostgreSQL tests join the run (ledger/postgres/ is reached by them alone); nothing else changes
    args_before, args_after = before["pytest_add_cli_args"], after["pytest_add_cli_args"]
    k = args_before.index("-k")
    assert args_after[: k + 1] == args_before[: k + 1] and len(args_after) == len(args_before)
    assert "not postgres" in args_before[k + 1] and args_after[k + 1] == args_before[k + 1].replace(
        " and not postgres", ""
    )
    assert scope.widened(widened, listing) == widened


def test_the_round4_report_covers_exactly_the_modules_the_scope_adds() -> None:
    report = load_tool("report")
    pyproject = (ROOT / "pyproject.toml").read_text()
    listing = (ROOT / "tools" / "mutation" / "round4-modules.txt").read_text()
    before = tomllib.loads(pyproject)["tool"]["mutmut"]["only_mutate"]
    after = tomllib.loads(scope.widened(pyproject, listing))["tool"]["mutmut"]["only_mutate"]
    assert report.listed_modules(listing) == after[len(before) :]
    assert report.listed_modules("# a.py comment\ntests: tests/x.py\nk: not x.py\n  dpmem_ref/a.py  \n") == [
        "dpmem_ref/a.py"
    ]
