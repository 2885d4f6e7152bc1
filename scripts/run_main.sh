#!/usr/bin/env bash
# The main job on embedded defaults: the Figure 2 example through the kernel, then the
# evaluation pipeline's smoke preset on the CPU with the small models shipped in PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
VENV="${DPMEM_VENV:-.venv}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "== dpmem run: the paper's Figure 2 example, 10 affordable-dinner queries (B_diabetes = 2, B_debt = 8, K = 3)"
"$VENV/bin/dpmem" run examples/figure2.toml --store M --queries examples/figure2-queries.txt --seed 0
echo "== dpmem audit: worst case over all adaptive strategies, T = 16, pair differing in the diabetes group"
"$VENV/bin/dpmem" audit examples/figure2.toml --store-a M --store-b M_no_diabetes --horizon 16
echo "== dpmem-eval run --preset smoke (CPU, SmolLM2-135M-Instruct, all-MiniLM-L6-v2)"
"$VENV/bin/dpmem-eval" run --preset smoke --out runs/smoke "$@"
