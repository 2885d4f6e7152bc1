#!/usr/bin/env bash
# The main job on embedded defaults: the Figure 2 example through the kernel, then the
# evaluation pipeline's smoke preset on the CPU with the small models shipped in PyPI packages,
# then a summary in plain words. DPMEM_VENV: the virtual environment (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
VENV="${DPMEM_VENV:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
OUT="${DPMEM_RUN_OUT:-runs/smoke}"
mkdir -p runs
echo "== [1/3] dpmem run: the paper's Figure 2 example, 10 affordable-dinner queries (B_diabetes = 2, B_debt = 8, K = 3)"
"$VENV/bin/dpmem" run examples/figure2.toml --store M --queries examples/figure2-queries.txt --seed 0
echo "== [2/3] dpmem audit: worst case over all adaptive strategies, T = 16, pair differing in the diabetes group"
"$VENV/bin/dpmem" audit examples/figure2.toml --store-a M --store-b M_no_diabetes --horizon 16
"$VENV/bin/dpmem" audit examples/figure2.toml --store-a M --store-b M_no_diabetes --horizon 16 --json > runs/figure2-audit.json
echo "== [3/3] dpmem-eval run --preset smoke (CPU, SmolLM2-135M-Instruct, all-MiniLM-L6-v2, proxy judge; a few minutes)"
"$VENV/bin/dpmem-eval" run --preset smoke --out "$OUT" "$@"
"$VENV/bin/python" scripts/main_summary.py runs/figure2-audit.json "$OUT"
