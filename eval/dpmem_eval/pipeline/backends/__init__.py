"""Generation backends behind one protocol (`base.Backend`), chosen by name:

- `hf` (hf.py): transformers, batched by a token budget, chat templates; bf16 with
  device_map="auto" when CUDA is available, float32 on CPU (`--dtype`, `--device-map`
  override). Any model id or local path (the paper's Qwen2.5-7B-Instruct,
  Llama-3.1-8B-Instruct, Gemma-2-9B-it) or the alias `smollm2` (CPU default).
- `vllm` (vllm.py): imported only when chosen (optional extra `dpmem-eval[gpu]`);
  `--tensor-parallel-size` spreads a model over several GPUs.
- `echo` (echo.py): a deterministic, dependency-free stand-in that restates its input; for tests.

Every backend has `close()` (batching.close_backend): the run unloads each model before the
next stage loads its own. The backends import `base` and nothing of `generation`, which
wraps them (cache, batching): the dependency points one way.

`hf_backend` and `vllm_backend` are registered under the entry-point group `dpmem.backends`
(pyproject.toml): the kernel's `--llm smollm2|hf:ID` channel builds them by that name.
"""

from __future__ import annotations

from typing import Any

from dpmem_eval.pipeline.backends.base import Backend, DecodingConfig, Messages, fold_system, rejects_system_role
from dpmem_eval.pipeline.backends.echo import EchoBackend

__all__ = ["Backend", "DecodingConfig", "EchoBackend", "Messages", "backend_options", "fold_system", "hf_backend",
           "make_backend", "rejects_system_role", "vllm_backend"]


def backend_options(config: Any) -> dict[str, Any]:
    """The engine settings of a run configuration, for make_backend."""
    return {"tensor_parallel_size": config.tensor_parallel_size, "device_map": config.device_map,
            "dtype": config.dtype, "token_budget": config.token_budget}


def make_backend(name: str, model_ref: str, batch_size: int = 16, cache_dir: str | None = None,
                 tensor_parallel_size: int = 1, device_map: str | None = None, dtype: str | None = None,
                 token_budget: int | None = None) -> Backend:
    if name == "hf":
        from dpmem_eval.pipeline.backends.hf import HFBackend
        from dpmem_eval.pipeline.models import set_thread_waiting

        set_thread_waiting()  # before the backend first imports torch (whoever builds it)

        return HFBackend(model_ref, batch_size=batch_size, cache_dir=cache_dir, device_map=device_map, dtype=dtype,
                         token_budget=token_budget)
    if name == "vllm":
        from dpmem_eval.pipeline.backends.vllm import VLLMBackend

        return VLLMBackend(model_ref, cache_dir=cache_dir, tensor_parallel_size=tensor_parallel_size, dtype=dtype)
    if name == "echo":
        return EchoBackend(model_ref)
    raise ValueError(f"backend: expected one of hf, vllm, echo; found {name!r}")


def hf_backend(model_ref: str) -> Backend:
    """The `hf` backend over one model, one prompt at a time (the agent runtime's channel)."""
    return make_backend("hf", model_ref, batch_size=1)


def vllm_backend(model_ref: str) -> Backend:
    """The `vllm` backend over one model (the agent runtime's channel on a GPU)."""
    return make_backend("vllm", model_ref, batch_size=1)
