"""The two distributions as published libraries: one LICENSE for the code,
py.typed, authors and classifiers, ranges (not pins) in dpmem-eval's install requirements
(the pins live in requirements/constraints.txt), and `counterexamples` declared."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _project(path: Path) -> dict:
    return tomllib.loads(path.read_text())["project"]


def test_one_licence_for_the_code():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert (ROOT / "eval" / "LICENSE").resolve() == (ROOT / "LICENSE").resolve()
    for path in (ROOT / "pyproject.toml", ROOT / "eval" / "pyproject.toml"):
        project = _project(path)
        assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"], path


def test_metadata_and_typed_markers():
    for path, package in ((ROOT / "pyproject.toml", ROOT / "dpmem_ref"), (ROOT / "eval" / "pyproject.toml",
                                                                           ROOT / "eval" / "dpmem_eval")):
        project = _project(path)
        assert project["authors"] and project["readme"]
        assert "Typing :: Typed" in project["classifiers"]
        assert "Programming Language :: Python :: 3.11" in project["classifiers"]
        assert (package / "py.typed").is_file()


def test_eval_install_requirements_are_ranges_and_pins_live_in_constraints():
    project = _project(ROOT / "eval" / "pyproject.toml")
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    assert not [r for r in requirements if "==" in r]
    pinned = {line.split("==")[0].lower() for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    for requirement in project["dependencies"][1:]:  # [0] is the kernel, installed from this repository
        name = re.split(r"[<>=!~ \[;]", requirement, maxsplit=1)[0].lower()
        assert name in pinned, f"{name} has no pin in requirements/constraints.txt"


def test_counterexamples_is_declared():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "counterexamples" in data["tool"]["setuptools"]["packages"]["find"]["include"]
    assert data["project"]["scripts"]["dpmem-counterexamples"] == "counterexamples.__main__:main"
