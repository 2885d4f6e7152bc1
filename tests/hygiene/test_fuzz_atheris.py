"""Coverage-guided fuzzing of `dpmem run` with atheris (libFuzzer), when it is installed.

Seeded with the Figure 2 description; every input is written as the config file and run
through the CLI in-process. Any exception that escapes, an exit code other than 0/1/2,
or a refusal that is not one "dpmem: error: ..." line crashes the fuzzer. Slow only
(`-m slow`; instrumenting the imports alone takes about a minute): 10,000 runs, or
DPMEM_ATHERIS_RUNS.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")

ROOT = Path(__file__).resolve().parents[2]
RUNS = int(os.environ.get("DPMEM_ATHERIS_RUNS", "10000"))

HARNESS = r"""
import contextlib, io, os, sys
import atheris
with atheris.instrument_imports():
    from dpmem_ref.cli import main

WORK = sys.argv[1]
CONFIG = os.path.join(WORK, "config.toml")
QUERIES = os.path.join(WORK, "queries.txt")
with open(QUERIES, "w") as handle:
    handle.write("affordable-dinner\ncheckup-reminder\n")


def one_input(data: bytes) -> None:
    with open(CONFIG, "wb") as handle:
        handle.write(data)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["run", CONFIG, "--store", "M", "--queries", QUERIES, "--seed", "0"])
        except SystemExit as exit_:
            code = exit_.code
    if code not in (0, 1, 2):
        raise RuntimeError(f"exit code {code!r}")
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("dpmem: error: "):
            raise RuntimeError("refusal is not one 'dpmem: error:' line")


atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
atheris.Fuzz()
"""


def run_atheris(tmp_path: Path, runs: int) -> str:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(ROOT / "examples" / "figure2.toml", corpus / "figure2.toml")
    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    result = subprocess.run(
        [sys.executable, str(harness), str(tmp_path), f"-atheris_runs={runs}", "-max_len=8192", "-seed=1", str(corpus)],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr


@pytest.mark.slow
def test_atheris_cli(tmp_path: Path) -> None:
    log = run_atheris(tmp_path, RUNS)
    print("\n" + "\n".join(line for line in log.splitlines() if line.startswith("Done") or " DONE " in line))
    assert f"Done {RUNS} in" in log
