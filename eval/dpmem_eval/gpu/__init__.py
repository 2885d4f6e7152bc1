"""GPU planning and checks: the paper models' published configurations (`archs`), the memory
and throughput model (`memory_plan`), and the one-command hf bf16 check (`check`,
`scripts/gpu_check.sh`). Nothing here downloads anything or needs vLLM."""
