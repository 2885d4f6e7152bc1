#!/usr/bin/env bash
# One command, under 8 minutes on one CUDA GPU: the hf bf16 path end to end on the paper
# preset's shapes with RANDOM-WEIGHT Qwen2.5-7B / Llama-3.1-8B / Gemma-2-9B built from their
# published configs (nothing is downloaded). Writes results/gpu/gpu_check.json (or --out).
# Needs only python3 with torch + transformers (+ tokenizers, jinja2 that come with them).
# Without CUDA (or with --tiny) it runs tiny configs of the same classes on the CPU.
#   scripts/gpu_check.sh [--tiny] [--out FILE] [--turns 1,8,16] [--batch 64] [--time-limit 400]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$ROOT:$ROOT/eval${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
cd "$ROOT"
exec "$PY" -m dpmem_eval.gpu.check "$@"
