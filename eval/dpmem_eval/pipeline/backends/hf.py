"""The transformers backend (`--backend hf`): batched generation with chat templates.

dtype: bfloat16 on CUDA, float32 on CPU unless `--dtype` says otherwise; device map: "auto"
on CUDA (accelerate spreads a model over every visible GPU), none on CPU, unless
`--device-map` says otherwise. `close()` drops the model and frees the device memory.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from dpmem_eval.pipeline.backends.base import DecodingConfig, Messages, fold_system, rejects_system_role
from dpmem_eval.pipeline.batching import free_accelerator_memory


class HFBackend:
    """transformers causal LM; loaded lazily on the first cache miss.

    dtype: bfloat16 on CUDA, float32 on CPU unless given; device_map: "auto" on CUDA (spreads a
    model over every visible GPU), none on CPU, unless given. The token budget of a batch
    comes from the memory plan of the loaded model (free device memory after the weights)
    unless the run configuration sets `token_budget`."""

    def __init__(self, model_ref: str, batch_size: int = 16, cache_dir: str | None = None, device: str | None = None,
                 device_map: str | None = None, dtype: str | None = None, token_budget: int | None = None) -> None:
        self.model_id = model_ref
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.device = device
        self.device_map = device_map
        self.dtype = dtype
        self.configured_token_budget = token_budget
        self._model: Any = None
        self._tokenizer: Any = None
        self._fold = False
        self.load_seconds = 0.0

    @classmethod
    def from_loaded(cls, model: Any, tokenizer: Any, model_id: str, batch_size: int = 16,
                    token_budget: int | None = None) -> HFBackend:
        """A backend around a model built in memory (random-weight checks, tests)."""
        backend = cls(model_id, batch_size=batch_size, token_budget=token_budget)
        backend._attach(model, tokenizer)
        return backend

    def _attach(self, model: Any, tokenizer: Any) -> None:
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model.eval()
        if model.generation_config.pad_token_id is None:
            model.generation_config.pad_token_id = tokenizer.pad_token_id
        self._model, self._tokenizer = model, tokenizer
        self._fold = rejects_system_role(tokenizer)

    def resolved(self) -> dict[str, str | None]:
        """The dtype and device map this backend uses (recorded in run.json)."""
        import torch

        cuda = torch.cuda.is_available() and self.device != "cpu" and self.device_map != "cpu"
        return {"dtype": self.dtype or ("bfloat16" if cuda else "float32"),
                "device_map": self.device_map or ("auto" if cuda else None)}

    def _path(self) -> str:
        from pathlib import Path

        from dpmem_eval.pipeline.models import resolve_response_model, set_offline

        set_offline()
        return resolve_response_model(self.model_id, Path(self.cache_dir) if self.cache_dir else None)

    def _load_tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self._path())
            self._fold = rejects_system_role(self._tokenizer)
        return self._tokenizer

    def _load(self) -> None:
        start = time.perf_counter()
        import torch
        from transformers import AutoModelForCausalLM

        settings = self.resolved()
        kwargs: dict[str, Any] = {"dtype": getattr(torch, str(settings["dtype"]))}
        if settings["device_map"] is not None:
            kwargs["device_map"] = settings["device_map"]
        tokenizer = self._load_tokenizer()
        model = AutoModelForCausalLM.from_pretrained(self._path(), **kwargs)
        self._attach(model, tokenizer)
        self.load_seconds = time.perf_counter() - start

    def render(self, messages: Messages) -> str:
        from dpmem_eval.pipeline.prompts import render_plain

        tokenizer = self._load_tokenizer()
        if getattr(tokenizer, "chat_template", None):
            shown = fold_system(messages) if self._fold else messages
            return tokenizer.apply_chat_template(shown, tokenize=False, add_generation_prompt=True)
        return render_plain(messages)

    def count_tokens(self, messages: Messages) -> int:
        """Prompt tokens of the rendered prompt, from the model's own tokenizer."""
        return len(self._load_tokenizer()(self.render(messages), add_special_tokens=False)["input_ids"])

    def token_budget(self, longest_prompt: int, max_new_tokens: int) -> int | None:
        """The configured budget, or the memory plan's on CUDA (free memory after the weights
        at prompts of `longest_prompt` tokens); None on a CPU (count cap only)."""
        if self.configured_token_budget is not None:
            return self.configured_token_budget
        if self._model is None:
            self._load()
        import torch

        if self._model.device.type != "cuda":
            return None
        from dpmem_eval.gpu.memory_plan import token_budget

        free = sum(torch.cuda.mem_get_info(i)[0] for i in range(torch.cuda.device_count()))
        return token_budget(self._model.config.to_dict(), free, longest_prompt, max_new_tokens,
                            dtype_bytes=self._model.dtype.itemsize)

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        if self._model is None:
            self._load()
        import torch

        tokenizer, model = self._tokenizer, self._model
        texts = [self.render(m) for m in batch]
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
        kwargs: dict[str, object] = {"max_new_tokens": decoding.max_new_tokens, "pad_token_id": tokenizer.pad_token_id}
        if decoding.temperature > 0:
            torch.manual_seed(decoding.seed)
            kwargs.update(do_sample=True, temperature=decoding.temperature, top_p=decoding.top_p)
        else:
            kwargs.update(do_sample=False)
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        new = out[:, enc["input_ids"].shape[1]:].tolist()
        eos = model.generation_config.eos_token_id
        stops = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        results = []
        for row in new:
            # a finished sequence is padded after its end-of-sequence token: count up to it
            end = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))
            results.append((tokenizer.decode(row[:end], skip_special_tokens=True).strip(), end))
        return results

    def close(self) -> None:
        """Drop the model and tokenizer and free the device memory (between stages)."""
        self._model = None
        self._tokenizer = None
        free_accelerator_memory()
