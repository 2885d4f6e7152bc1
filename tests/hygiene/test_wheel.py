"""The wheel carries every file its commands read: built from this tree, unpacked into an empty
folder and run from there (the repository not on the path), `dpmem` and `dpmem-counterexamples`
find their data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.kernel_fixtures import ROOT


def test_the_packaged_evaluation_configuration_is_the_example() -> None:
    packaged = ROOT / "counterexamples" / "evaluation.toml"
    assert packaged.read_bytes() == (ROOT / "examples" / "evaluation.toml").read_bytes()


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a fresh copy of what the distribution is made of, so no build/ or egg-info left
    # in the working tree by an earlier build can supply a file the sources would not.
    source = out / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("dpmem_ref", "counterexamples"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    if build.returncode != 0:
        pytest.skip(f"pip wheel could not build here: {build.stderr.strip().splitlines()[-1:]}")
    (wheel,) = out.glob("dpmem_ref-*.whl")
    site = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def _run_installed(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Python with only the unpacked wheel in front of the environment's packages; the repository
    is not on the path (a different working folder, and PYTHONPATH names the wheel alone)."""
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}
    return subprocess.run([sys.executable, *args], cwd=site.parent, env=env, capture_output=True, text=True, timeout=300)


def test_installed_counterexamples_run_table4_from_the_wheel(unpacked_wheel: Path) -> None:
    where = _run_installed(unpacked_wheel, "-c", "import counterexamples, dpmem_ref; print(counterexamples.__file__, dpmem_ref.__file__)")
    assert where.returncode == 0 and all(str(unpacked_wheel) in p for p in where.stdout.split()), where
    done = _run_installed(unpacked_wheel, "-m", "counterexamples", "table4")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "IncompleteCharge" in done.stdout


def test_installed_kernel_finds_its_schemas(unpacked_wheel: Path) -> None:
    done = _run_installed(unpacked_wheel, "-c", "from dpmem_ref.schemas import schema; print(sorted(schema('audit')))")
    assert done.returncode == 0 and "properties" in done.stdout, done.stderr[-2000:]
