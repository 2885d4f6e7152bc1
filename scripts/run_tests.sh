#!/usr/bin/env bash
# The whole test suite: lint and types on the kernel, then every pytest suite.
# CI=true selects the derandomized Hypothesis `ci` profile (also the default).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
VENV="${DPMEM_VENV:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
echo "== ruff (kernel, counterexamples)"
"$VENV/bin/ruff" check dpmem_ref counterexamples
echo "== mypy --strict (kernel)"
"$VENV/bin/mypy" --strict dpmem_ref
echo "== pytest"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
