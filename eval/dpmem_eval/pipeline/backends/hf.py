"""The transformers backend (`--backend hf`): batched generation with chat templates.

dtype: bfloat16 on CUDA, float32 on CPU unless `--dtype` says otherwise; device map: "auto"
on CUDA (accelerate spreads a model over every visible GPU), none on CPU, unless
`--device-map` says otherwise. `close()` drops the model and frees the device memory.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from typing import Any

from dpmem_eval.pipeline.backends.base import DecodingConfig, Messages, fold_system, rejects_system_role
from dpmem_eval.pipeline.batching import free_accelerator_memory

MIN_SHARED_PREFIX = 8
"""Tokens a batch's prompts must share before the shared-prefix prefill is used."""


def _torch() -> Any:
    import torch

    return torch


def shared_prefix_length(rows: list[list[int]]) -> int:
    """Token ids every row begins with, at most the shortest row less one (each prompt keeps
    at least one token of its own, whose logits start its reply)."""
    first, length = rows[0], min(len(row) for row in rows) - 1
    for row in rows[1:]:
        same = 0
        while same < length and row[same] == first[same]:
            same += 1
        length = same
    return max(length, 0)


class HFBackend:
    """transformers causal LM; loaded lazily on the first cache miss.

    dtype: bfloat16 on CUDA, float32 on CPU unless given; device_map: "auto" on CUDA (spreads a
    model over every visible GPU), none on CPU, unless given. The token budget of a batch
    comes from the memory plan of the loaded model (free device memory after the weights)
    unless the run configuration sets `token_budget`."""

    def __init__(self, model_ref: str, batch_size: int = 16, cache_dir: str | None = None, device: str | None = None,
                 device_map: str | None = None, dtype: str | None = None, token_budget: int | None = None,
                 shared_prefix: bool | None = None) -> None:
        self.model_id = model_ref
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.device = device
        self.device_map = device_map
        self.dtype = dtype
        self.configured_token_budget = token_budget
        self.shared_prefix = shared_prefix
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
        from dpmem_ref.channel.prompt import render_plain

        tokenizer = self._load_tokenizer()
        if getattr(tokenizer, "chat_template", None):
            shown = fold_system(messages) if self._fold else messages
            rendered: str = tokenizer.apply_chat_template(shown, tokenize=False, add_generation_prompt=True)
            return rendered
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
        kwargs: dict[str, object] = {"max_new_tokens": decoding.max_new_tokens, "pad_token_id": tokenizer.pad_token_id}
        if decoding.temperature > 0:
            torch.manual_seed(decoding.seed)
            kwargs.update(do_sample=True, temperature=decoding.temperature, top_p=decoding.top_p)
        else:
            kwargs.update(do_sample=False)
        rows = tokenizer(texts, add_special_tokens=False)["input_ids"] if self._prefix_sharing() else None
        shared = shared_prefix_length(rows) if rows is not None and len(rows) > 1 else 0
        with torch.inference_mode():
            if rows is not None and shared >= MIN_SHARED_PREFIX:
                out, width = self._generate_from_prefix(rows, shared, kwargs)
            else:
                enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
                out, width = model.generate(**enc, **kwargs), enc["input_ids"].shape[1]
        new = out[:, width:].tolist()
        eos = model.generation_config.eos_token_id
        stops = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        results = []
        for row in new:
            # a finished sequence is padded after its end-of-sequence token: count up to it
            end = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))
            results.append((tokenizer.decode(row[:end], skip_special_tokens=True).strip(), end))
        return results

    def _prefix_sharing(self) -> bool:
        """The shared-prefix prefill is used on a CPU in float32 unless told otherwise: there
        prefill is most of the work and the prompts of a batch share the system message."""
        if self.shared_prefix is not None:
            return self.shared_prefix
        return bool(self._model.device.type == "cpu" and self._model.dtype == _torch().float32)

    def _generate_from_prefix(self, rows: list[list[int]], shared: int, kwargs: dict[str, object]) -> tuple[Any, int]:
        """Generate a batch whose prompts all begin with the same `shared` tokens: those are
        prefilled once (batch of one) and their KV cache repeated over the batch; each prompt's
        rest is left-padded after the prefix ([prefix][pads][rest]), the attention mask hides
        the pads, and positions come from the mask (as with plain left padding), so every
        prompt sees the same tokens at the same positions. Returns the output ids and the
        width of the prompt part."""
        torch = _torch()
        model, pad = self._model, self._tokenizer.pad_token_id
        prefix = rows[0][:shared]
        rests = [row[shared:] for row in rows]
        width = max(len(rest) for rest in rests)
        ids = [prefix + [pad] * (width - len(rest)) + rest for rest in rests]
        mask = [[1] * shared + [0] * (width - len(rest)) + [1] * len(rest) for rest in rests]
        prefilled = model(input_ids=torch.tensor([prefix], device=model.device), use_cache=True)
        cache = getattr(prefilled, "cache", None) or prefilled.past_key_values
        cache.batch_repeat_interleave(len(rows))
        # transformers 5.x names the cache `cache` (`past_key_values` before)
        name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        out = model.generate(input_ids=torch.tensor(ids, device=model.device),
                             attention_mask=torch.tensor(mask, device=model.device), **{name: cache}, **kwargs)
        return out, shared + width

    def close(self) -> None:
        """Drop the model and tokenizer and free the device memory (between stages)."""
        self._model = None
        self._tokenizer = None
        free_accelerator_memory()
