"""The committed mutation-testing artefacts agree with their configuration:
every equivalence judgement names a mutant of a mutated module and gives one
line of reason, and the committed report meets the score floor with no unexplained or
stale judgement. (The run itself is `make mutation`, too long for the default suite.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.mutation_tools import load_tool

ROOT = Path(__file__).resolve().parents[2]


def _mutated_modules() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    return {path.removesuffix(".py").replace("/", ".") for path in config["only_mutate"]}


def test_every_equivalence_judgement_names_a_mutant_of_a_mutated_module_with_one_line_of_reason() -> None:
    equivalents = tomllib.loads((ROOT / "tools" / "mutation" / "equivalents.toml").read_text())["equivalent"]
    modules = _mutated_modules()
    assert equivalents
    for name, reason in equivalents.items():
        module, _, function = name.rpartition(".")
        assert module in modules, name
        assert re.fullmatch(r"x\S*__mutmut_\d+", function), name
        assert reason.strip() and "\n" not in reason and len(reason) >= 20, name


def test_the_round4_judgements_name_round4_mutants_once_apart_from_the_kernels() -> None:
    """The round-4 run judges with both files joined (tools/mutation/scope.py): a name judged in
    both would make the joined file invalid TOML, and a kernel mutant judged here would be judged
    outside the kernel's own report."""
    kernel = tomllib.loads((ROOT / "tools" / "mutation" / "equivalents.toml").read_text())["equivalent"]
    round4 = tomllib.loads((ROOT / "tools" / "mutation" / "equivalents-round4.toml").read_text())["equivalent"]
    listing = (ROOT / "tools" / "mutation" / "round4-modules.txt").read_text()
    modules = {module.removesuffix(".py").replace("/", ".") for module in load_tool("scope").listed_modules(listing)}
    assert round4 and not set(round4) & set(kernel)
    for name, reason in round4.items():
        module, _, function = name.rpartition(".")
        assert module in modules, name
        assert re.fullmatch(r"x\S*__mutmut_\d+", function), name
        assert reason.strip() and "\n" not in reason and len(reason) >= 20, name


def test_the_committed_report_meets_the_floor_with_every_survivor_judged() -> None:
    report = (ROOT / "tools" / "mutation" / "REPORT.md").read_text()
    raw = float(re.search(r"raw score \(killed / checked\): \*\*([\d.]+)%\*\*", report).group(1))  # type: ignore[union-attr]
    assert raw >= 90.0
    assert "- unexplained survivors: 0\n" in report
    assert "- equivalence entries that match no survivor (stale): 0\n" in report
    assert " 0 not checked)" in report and "UNEXPLAINED: needs a test" not in report
