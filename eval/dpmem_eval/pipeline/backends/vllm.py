"""The vLLM offline engine as a generation backend (optional extra `dpmem-eval[gpu]`).

One engine at a time: `close()` shuts it down (LLM.shutdown() where the installed vLLM has
it, else the V1 engine core's shutdown), destroys the model-parallel groups, and frees the
CUDA cache, so the next stage's engine can take the memory. All prompts of a call are
submitted at once; vLLM schedules them (continuous batching, chunked prefill, prefix
caching) within `gpu_memory_utilization`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dpmem_eval.pipeline.backends.base import fold_system, rejects_system_role
from dpmem_eval.pipeline.models import ModelNotFound

if TYPE_CHECKING:
    from dpmem_eval.pipeline.backends.base import DecodingConfig


class BackendUnavailable(ModelNotFound):
    """The chosen backend's package is not installed (one line, exit 2)."""


def require_vllm() -> None:
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise BackendUnavailable("--backend vllm: vLLM is not installed; install the GPU extra: "
                                 "pip install -e 'eval[gpu]' -c requirements/gpu-constraints.txt (docs/eval.md)")


class VLLMBackend:
    """vLLM offline engine; imported only when this backend is chosen."""

    schedules_itself = True

    def __init__(self, model_ref: str, cache_dir: str | None = None, tensor_parallel_size: int = 1,
                 dtype: str | None = None, gpu_memory_utilization: float = 0.9) -> None:
        require_vllm()
        self.model_id = model_ref
        self.cache_dir = cache_dir
        self.tensor_parallel_size = tensor_parallel_size
        self.dtype = dtype or "bfloat16"
        self.gpu_memory_utilization = gpu_memory_utilization
        self._llm: Any = None
        self._fold = False
        self.load_seconds = 0.0

    def resolved(self) -> dict[str, object]:
        """The engine settings in use (recorded in run.json)."""
        return {"dtype": self.dtype, "tensor_parallel_size": self.tensor_parallel_size,
                "gpu_memory_utilization": self.gpu_memory_utilization}

    def _load(self, seed: int) -> None:
        from pathlib import Path

        from vllm import LLM

        from dpmem_eval.pipeline.models import resolve_response_model, set_offline

        set_offline()
        start = time.perf_counter()
        path = resolve_response_model(self.model_id, Path(self.cache_dir) if self.cache_dir else None)
        self._llm = LLM(model=path, dtype=self.dtype, seed=seed, tensor_parallel_size=self.tensor_parallel_size,
                        gpu_memory_utilization=self.gpu_memory_utilization)
        self._fold = rejects_system_role(self._llm.get_tokenizer())
        self.load_seconds = time.perf_counter() - start

    def generate(self, batch: Sequence[list[dict[str, str]]], decoding: DecodingConfig) -> list[tuple[str, int]]:
        from vllm import SamplingParams

        if self._llm is None:
            self._load(decoding.seed)
        params = SamplingParams(max_tokens=decoding.max_new_tokens, temperature=decoding.temperature,
                                top_p=decoding.top_p, seed=decoding.seed)
        conversations = [fold_system(m) if self._fold else m for m in batch]
        outputs = self._llm.chat(conversations, params, use_tqdm=False)
        return [(o.outputs[0].text.strip(), len(o.outputs[0].token_ids)) for o in outputs]

    def close(self) -> None:
        """Shut the engine down and free its GPU memory (one engine resident at a time)."""
        from dpmem_eval.pipeline.batching import free_accelerator_memory

        llm, self._llm = self._llm, None
        if llm is None:
            return
        if hasattr(llm, "shutdown"):
            llm.shutdown()
        else:
            engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
            if engine_core is not None and hasattr(engine_core, "shutdown"):
                engine_core.shutdown()
        try:
            from vllm.distributed.parallel_state import destroy_distributed_environment, destroy_model_parallel
        except ImportError:  # layout of older/newer vLLM releases
            pass
        else:
            destroy_model_parallel()
            destroy_distributed_environment()
        del llm
        free_accelerator_memory()
