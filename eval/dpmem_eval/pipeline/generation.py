"""One generation interface, three backends, one persistent cache.

- `hf`: transformers, batched, chat templates; bf16 with device_map="auto" when CUDA is
  available, float32 on CPU. Any model id or local path (the paper's Qwen2.5-7B-Instruct,
  Llama-3.1-8B-Instruct, Gemma-2-9B-it) or the alias `smollm2` (CPU default).
- `vllm`: imported only when chosen (optional extra `dpmem-eval[vllm]`).
- `echo`: a deterministic, dependency-free stand-in that restates its input; for tests.

Prompts are chat message lists built by `prompts.build_messages`; the cache key is
(model, decoding configuration, messages), so a fully cached run never loads a model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

from dpmem_eval.pipeline.cache import ResponseCache, cache_key

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class DecodingConfig:
    """Shared by all compared interfaces of a response model (Appendix C.5).
    temperature 0 means greedy decoding (the channel is then deterministic)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


class Backend(Protocol):
    model_id: str

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        """Responses and their new-token counts, in input order."""


@dataclass
class GenerationStats:
    requested: int = 0
    cache_hits: int = 0
    generated: int = 0
    new_tokens: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0

    @property
    def generate_seconds(self) -> float:
        """Time spent generating, without the model load (which happens on the first miss)."""
        return max(self.seconds - self.load_seconds, 0.0)

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.generate_seconds if self.generate_seconds else 0.0

    @property
    def generations_per_second(self) -> float:
        return self.generated / self.generate_seconds if self.generate_seconds else 0.0

    def as_dict(self) -> dict[str, float]:
        out = asdict(self)
        out["tokens_per_second"] = round(self.tokens_per_second, 2)
        out["generations_per_second"] = round(self.generations_per_second, 3)
        return out


def fold_system(messages: Messages) -> Messages:
    """Fold the system message into the first user turn, for chat templates without a
    system role (Gemma-2). The content the model receives is unchanged."""
    if not messages or messages[0]["role"] != "system":
        return messages
    folded = [dict(m) for m in messages[1:]]
    folded[0]["content"] = messages[0]["content"] + "\n\n" + folded[0]["content"]
    return folded


class EchoBackend:
    """Deterministic stand-in: restates the conditioning and the query (tests, dry runs)."""

    def __init__(self, model_id: str = "echo") -> None:
        self.model_id = model_id
        self.calls: list[Messages] = []

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        out = []
        for messages in batch:
            self.calls.append(messages)
            system = messages[0]["content"].split("\n")[1:]
            guidance = " ".join(line.lstrip("- ") for line in system if line.startswith("- "))
            text = f"For '{messages[-1]['content']}': {guidance or 'general advice'}"
            words = text.split()[: decoding.max_new_tokens]
            out.append((" ".join(words), len(words)))
        return out


class HFBackend:
    """transformers causal LM; loaded lazily on the first cache miss."""

    def __init__(self, model_ref: str, batch_size: int = 16, cache_dir: str | None = None, device: str | None = None) -> None:
        self.model_id = model_ref
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.device = device
        self._model = None
        self._tokenizer = None
        self.load_seconds = 0.0

    def _load(self) -> None:
        from pathlib import Path

        from dpmem_eval.pipeline.models import resolve_response_model, set_offline

        set_offline()
        start = time.perf_counter()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = resolve_response_model(self.model_id, Path(self.cache_dir) if self.cache_dir else None)
        cuda = torch.cuda.is_available() and self.device != "cpu"
        tokenizer = AutoTokenizer.from_pretrained(path)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if cuda:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16, device_map="auto")
        else:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        model.eval()
        if model.generation_config.pad_token_id is None:
            model.generation_config.pad_token_id = tokenizer.pad_token_id
        self._model, self._tokenizer = model, tokenizer
        self.load_seconds = time.perf_counter() - start

    def render(self, messages: Messages) -> str:
        from dpmem_eval.pipeline.prompts import render_plain

        assert self._tokenizer is not None
        if getattr(self._tokenizer, "chat_template", None):
            try:
                return self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            except Exception:  # e.g. Gemma-2 templates refuse a system role
                return self._tokenizer.apply_chat_template(fold_system(messages), tokenize=False, add_generation_prompt=True)
        return render_plain(messages)

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        if self._model is None:
            self._load()
        import torch

        assert self._model is not None and self._tokenizer is not None
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
        new = out[:, enc["input_ids"].shape[1]:]
        results = []
        for row in new:
            ids = [int(t) for t in row if int(t) != tokenizer.pad_token_id]
            results.append((tokenizer.decode(ids, skip_special_tokens=True).strip(), len(ids)))
        return results


class VLLMBackend:
    """vLLM offline engine; imported only when this backend is chosen."""

    def __init__(self, model_ref: str, cache_dir: str | None = None, tensor_parallel_size: int = 1) -> None:
        self.model_id = model_ref
        self.cache_dir = cache_dir
        self.tensor_parallel_size = tensor_parallel_size
        self._llm = None
        self.batch_size = 1024
        self.load_seconds = 0.0

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:  # pragma: no cover - optional extra
            raise RuntimeError("backend 'vllm' needs the optional extra: pip install 'dpmem-eval[vllm]'") from exc
        if self._llm is None:
            from pathlib import Path

            from dpmem_eval.pipeline.models import resolve_response_model, set_offline

            set_offline()
            start = time.perf_counter()
            path = resolve_response_model(self.model_id, Path(self.cache_dir) if self.cache_dir else None)
            self._llm = LLM(model=path, dtype="bfloat16", seed=decoding.seed, tensor_parallel_size=self.tensor_parallel_size)
            self.load_seconds = time.perf_counter() - start
        params = SamplingParams(max_tokens=decoding.max_new_tokens, temperature=decoding.temperature,
                                top_p=decoding.top_p, seed=decoding.seed)
        try:
            outputs = self._llm.chat(list(batch), params, use_tqdm=False)
        except Exception:  # e.g. Gemma-2 templates refuse a system role
            outputs = self._llm.chat([fold_system(m) for m in batch], params, use_tqdm=False)
        return [(o.outputs[0].text.strip(), len(o.outputs[0].token_ids)) for o in outputs]


def make_backend(name: str, model_ref: str, batch_size: int = 16, cache_dir: str | None = None) -> Backend:
    if name == "hf":
        return HFBackend(model_ref, batch_size=batch_size, cache_dir=cache_dir)
    if name == "vllm":
        return VLLMBackend(model_ref, cache_dir=cache_dir)
    if name == "echo":
        return EchoBackend(model_ref)
    raise ValueError(f"backend: expected one of hf, vllm, echo; found {name!r}")


def messages_key(messages: Messages) -> str:
    return json.dumps(messages, ensure_ascii=False, sort_keys=True)


class CachedGenerator:
    """Looks every prompt up in the cache, generates the misses in batches (deduplicated,
    longest first), writes each batch to the cache as soon as it is done."""

    def __init__(self, backend: Backend, cache: ResponseCache, decoding: DecodingConfig, batch_size: int = 16,
                 progress: bool = True) -> None:
        self.backend = backend
        self.cache = cache
        self.decoding = decoding
        self.batch_size = batch_size
        self.progress = progress
        self.stats = GenerationStats()

    def key(self, messages: Messages) -> str:
        return cache_key(self.backend.model_id, self.decoding.as_dict(), messages_key(messages))

    def generate(self, prompts: Sequence[Messages], description: str = "generating") -> list[str]:
        keys = [self.key(m) for m in prompts]
        found = self.cache.get_many(keys)
        self.stats.requested += len(prompts)
        self.stats.cache_hits += sum(1 for k in keys if k in found)
        todo: dict[str, Messages] = {}
        for k, m in zip(keys, prompts, strict=True):
            if k not in found and k not in todo:
                todo[k] = m
        if todo:
            order = sorted(todo, key=lambda k: -len(messages_key(todo[k])))
            bar = None
            if self.progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(order), desc=description, unit="gen", leave=False)
            decoding_json = json.dumps(self.decoding.as_dict(), sort_keys=True)
            for start in range(0, len(order), self.batch_size):
                chunk = order[start:start + self.batch_size]
                began = time.perf_counter()
                results = self.backend.generate([todo[k] for k in chunk], self.decoding)
                self.stats.seconds += time.perf_counter() - began
                rows = []
                for k, (text, n_tokens) in zip(chunk, results, strict=True):
                    found[k] = text
                    self.stats.generated += 1
                    self.stats.new_tokens += n_tokens
                    rows.append((k, self.backend.model_id, decoding_json, messages_key(todo[k]), text, n_tokens))
                self.cache.put_many(rows)
                if bar is not None:
                    bar.update(len(chunk))
            if bar is not None:
                bar.close()
        self.stats.load_seconds = getattr(self.backend, "load_seconds", 0.0)
        return [found[k] for k in keys]
