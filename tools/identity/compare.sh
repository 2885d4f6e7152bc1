#!/usr/bin/env bash
# Byte-identity of the shipped examples' outputs between a base tree and this one:
#   git worktree add --detach /tmp/base <commit>      # once
#   tools/identity/compare.sh /tmp/base               # exit 0: identical; else the diff
# Both trees run with this tree's interpreter (PYTHON, default .venv/bin/python) and their
# own code and examples (tools/identity/outputs.py --root).
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE="${1:?usage: tools/identity/compare.sh BASE_TREE}"
PY="${PYTHON:-.venv/bin/python}"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/dpmem-identity-XXXXXX")"
PYTHONPATH="$BASE:$BASE/eval" "$PY" tools/identity/outputs.py "$OUT/base" --root "$BASE"
PYTHONPATH="$PWD:$PWD/eval" "$PY" tools/identity/outputs.py "$OUT/this" --root "$PWD"
if diff -r "$OUT/base" "$OUT/this"; then
  echo "identical: $(ls "$OUT/this" | wc -l) outputs ($OUT)"
else
  echo "differ (above): $OUT/base vs $OUT/this"
  exit 1
fi
