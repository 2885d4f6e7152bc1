#!/usr/bin/env bash
# The whole test suite: lint and types on the kernel, the evaluation's smoke preset end to
# end, then every pytest suite (last, so that its summary is the closing line).
# CI=true selects the derandomized Hypothesis `ci` profile (also the default).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
VENV="${DPMEM_VENV:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"
echo "== ruff (whole tree)"
"$VENV/bin/ruff" check .
echo "== mypy --strict (kernel)"
"$VENV/bin/mypy" --strict dpmem_ref
echo "== API reference (pdoc, warnings are errors)"
"$VENV/bin/python" scripts/build_docs.py --out runs/api-docs
if [ "${DPMEM_SKIP_SMOKE:-0}" != "1" ]; then
  # The evaluation end to end on the CPU (SmolLM2-135M, MiniLM auditor, proxy judge): every
  # method, every table. A few minutes cold; reruns are served by the response cache.
  echo "== dpmem-eval run --preset smoke (end to end)"
  rm -rf runs/ci-smoke
  "$VENV/bin/dpmem-eval" run --preset smoke --out runs/ci-smoke
  for table in table2 table3 table4; do
    test -s "runs/ci-smoke/$table.md" || { echo "smoke run wrote no $table.md" >&2; exit 1; }
  done
fi
echo "== pytest"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
