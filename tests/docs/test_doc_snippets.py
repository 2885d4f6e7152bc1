"""Docs are executable: every code block of the README and docs/ runs as pasted.

Blocks are read with pytest-codeblocks' extractor (its HTML-comment markers: `<!--pytest-codeblocks:cont-->`
continues the previous block, `<!--pytest.mark.skip(reason="...")-->` keeps a block out of the test and
must say why, e.g. it installs packages, needs a GPU or runs for minutes). Each block runs in a fresh
folder holding copies of examples/ and results/ (the folders snippets read and may write: a snippet can
never change a tracked example or result) and links to the repository's other folders, with the
environment's console scripts (`dpmem`, `dpmem-eval`, `python`) first on PATH; the repository's
`git status` must be the same after the block as before it:

- `python`: run as one script (with its continuations);
- `bash` / `sh`: run by `bash -e -o pipefail`;
- `toml`: parsed (fragments of the interface format must at least be TOML).

Untagged blocks are output or prose and are not run.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "eval/README.md", "results/README.md", "docs/*.md", "results/*/README.md")
RUN = {"python", "bash", "sh", "toml"}
COPIED = ("examples", "results")
LINKED = ("benchmarks", "counterexamples", "dpmem_ref", "eval", "requirements", "scripts", "tests", "tools", "docs")
TIMEOUT_S = 600


def documents() -> list[Path]:
    found: list[Path] = []
    for pattern in DOCUMENTS:
        found += sorted(p for p in ROOT.glob(pattern) if p.is_file())
    return found


def _mark(text: str) -> pytest.MarkDecorator:
    """`pytest.mark.skip(reason="...")` (a reason is required); any other marker is refused."""
    call = ast.parse(text, mode="eval").body
    if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "pytest.mark.skip"):
        raise ValueError(f"snippet marker: expected pytest.mark.skip(reason=...), found {text!r}")
    reasons = [ast.literal_eval(k.value) for k in call.keywords if k.arg == "reason"]
    if not reasons or not str(reasons[0]).strip():
        raise ValueError(f"snippet marker: a skipped block must say why, found {text!r}")
    return pytest.mark.skip(reason=str(reasons[0]))


def snippets() -> list[object]:
    from pytest_codeblocks import extract_from_file

    params = []
    for path in documents():
        relative = path.relative_to(ROOT)
        for block in extract_from_file(path):
            syntax = (block.syntax or "").split()[0] if block.syntax else ""
            if syntax not in RUN:
                continue
            marks = [_mark(m) for m in block.marks]
            params.append(pytest.param(syntax, block.code, block.expected_output, id=f"{relative}:{block.lineno}", marks=marks))
    return params


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    for name in COPIED:
        shutil.copytree(ROOT / name, tmp_path / name)
    for name in LINKED:
        if (ROOT / name).exists():
            (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def _environment() -> dict[str, str]:
    # As a new user runs them: no ledger key from the test session (a snippet that needs one shows how it is set).
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPMEM_LEDGER_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "eval"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    return env


@pytest.mark.parametrize(("syntax", "code", "expected"), snippets())
def test_snippet_runs_as_pasted(syntax: str, code: str, expected: str | None, sandbox: Path) -> None:
    if syntax == "toml":
        tomllib.loads(code)
        return
    before = _git_status()
    command = [sys.executable, "-c", code] if syntax == "python" else ["bash", "-e", "-o", "pipefail", "-c", code]
    done = subprocess.run(command, cwd=sandbox, env=_environment(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"exit {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    if expected is not None:
        assert done.stdout.strip() == expected.strip()
    for original in sorted((ROOT / "examples").rglob("*")):
        if original.is_file():
            relative = original.relative_to(ROOT)
            assert (sandbox / relative).read_bytes() == original.read_bytes(), f"the snippet wrote {relative}"
    assert _git_status() == before, "the snippet changed files of the repository"


def _git_status() -> str | None:
    """`git status --porcelain` of the repository (None outside a git checkout)."""
    done = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def test_every_skip_says_why() -> None:
    with pytest.raises(ValueError, match="must say why"):
        _mark('pytest.mark.skip(reason="")')
    with pytest.raises(ValueError, match="expected pytest.mark.skip"):
        _mark("pytest.mark.xfail")
