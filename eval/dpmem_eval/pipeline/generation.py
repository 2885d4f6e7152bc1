"""One generation interface, three backends, one persistent cache.

- `hf`: transformers, batched by a token budget, chat templates; bf16 with device_map="auto"
  when CUDA is available, float32 on CPU (`--dtype`, `--device-map` override). Any model id or local path (the paper's Qwen2.5-7B-Instruct,
  Llama-3.1-8B-Instruct, Gemma-2-9B-it) or the alias `smollm2` (CPU default).
- `vllm`: vllm_backend.py, imported only when chosen (optional extra `dpmem-eval[gpu]`);
  `--tensor-parallel-size` spreads a model over several GPUs.
- `echo`: a deterministic, dependency-free stand-in that restates its input; for tests.

Prompts are chat message lists built by `prompts.build_messages`; the cache key is
(model, decoding configuration, messages), so a fully cached run never loads a model.
Every backend has `close()` (batching.close_backend): the run unloads each model before
the next stage loads its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from dpmem_eval.pipeline.batching import free_accelerator_memory, oom_errors, token_budget_batches
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
    cache_hits: int = 0  # answered from the cache as earlier runs left it
    repeated: int = 0  # the same prompt as one generated earlier in this run (served by it)
    generated: int = 0
    new_tokens: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0
    token_budget: int = 0  # tokens per batch in use (0: count cap only)
    oom_halvings: int = 0
    batches: int = 0

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


def rejects_system_role(tokenizer: Any) -> bool:
    """True when the tokenizer's chat template refuses a system message (Gemma-2); decided
    once per model, so no rendering error is ever swallowed per prompt."""
    from jinja2.exceptions import TemplateError

    if not getattr(tokenizer, "chat_template", None):
        return False
    probe = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    try:
        tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
    except TemplateError:
        return True
    return False


def backend_options(config: Any) -> dict[str, Any]:
    """The engine settings of a run configuration, for make_backend."""
    return {"tensor_parallel_size": config.tensor_parallel_size, "device_map": config.device_map,
            "dtype": config.dtype, "token_budget": config.token_budget}


def make_backend(name: str, model_ref: str, batch_size: int = 16, cache_dir: str | None = None,
                 tensor_parallel_size: int = 1, device_map: str | None = None, dtype: str | None = None,
                 token_budget: int | None = None) -> Backend:
    if name == "hf":
        from dpmem_eval.pipeline.hf_backend import HFBackend

        return HFBackend(model_ref, batch_size=batch_size, cache_dir=cache_dir, device_map=device_map, dtype=dtype,
                         token_budget=token_budget)
    if name == "vllm":
        from dpmem_eval.pipeline.vllm_backend import VLLMBackend

        return VLLMBackend(model_ref, cache_dir=cache_dir, tensor_parallel_size=tensor_parallel_size, dtype=dtype)
    if name == "echo":
        return EchoBackend(model_ref)
    raise ValueError(f"backend: expected one of hf, vllm, echo; found {name!r}")


def messages_key(messages: Messages) -> str:
    return json.dumps(messages, ensure_ascii=False, sort_keys=True)


MAX_OOM_HALVINGS = 8


class CachedGenerator:
    """Looks every prompt up in the cache, generates the misses (deduplicated, longest first)
    in batches cut by a token budget (batching.token_budget_batches; backends that schedule
    themselves, vLLM, get every miss at once), writes each batch to the cache when it is
    done. Out of accelerator memory (and only that): the budget is halved and the batch
    retried, at most MAX_OOM_HALVINGS times; a single prompt that does not fit is an error."""

    def __init__(self, backend: Backend, cache: ResponseCache, decoding: DecodingConfig, batch_size: int = 16,
                 progress: bool = True, token_budget: int | None = None) -> None:
        self.backend = backend
        self.cache = cache
        self.decoding = decoding
        self.batch_size = batch_size
        self.progress = progress
        self.token_budget = token_budget
        self.stats = GenerationStats()
        self._generated: set[str] = set()  # keys generated by this generator (repeats are not cache hits)

    def key(self, messages: Messages) -> str:
        return cache_key(self.backend.model_id, self.decoding.as_dict(), messages_key(messages))

    def _lengths(self, todo: dict[str, Messages]) -> dict[str, int]:
        count = getattr(self.backend, "count_tokens", None)
        if count is None:  # echo / remote backends: characters as a proxy, ordering only
            return {k: len(messages_key(m)) for k, m in todo.items()}
        return {k: count(m) for k, m in todo.items()}

    def _budget(self, longest: int) -> int | None:
        if self.token_budget is not None:
            return self.token_budget
        plan = getattr(self.backend, "token_budget", None)
        return plan(longest, self.decoding.max_new_tokens) if plan is not None else None

    def generate(self, prompts: Sequence[Messages], description: str = "generating") -> list[str]:
        keys = [self.key(m) for m in prompts]
        found = self.cache.get_many(keys)
        self.stats.requested += len(prompts)
        todo: dict[str, Messages] = {}
        for k, m in zip(keys, prompts, strict=True):
            if k in found:
                if k in self._generated:
                    self.stats.repeated += 1
                else:
                    self.stats.cache_hits += 1
            elif k in todo:
                self.stats.repeated += 1
            else:
                todo[k] = m
        if todo:
            self._generate_missing(todo, found, description)
        self.stats.load_seconds = getattr(self.backend, "load_seconds", 0.0)
        return [found[k] for k in keys]

    def _generate_missing(self, todo: dict[str, Messages], found: dict[str, str], description: str) -> None:
        lengths = self._lengths(todo)
        order = sorted(todo, key=lambda k: -lengths[k])
        self_scheduling = getattr(self.backend, "schedules_itself", False)
        budget = None if self_scheduling else self._budget(lengths[order[0]])
        self.stats.token_budget = budget or 0
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(order), desc=description, unit="gen", leave=False)
        decoding_json = json.dumps(self.decoding.as_dict(), sort_keys=True)
        halvings = 0
        while order:
            if self_scheduling:
                chunk = order
            else:
                chunk = [order[i] for i in token_budget_batches([lengths[k] for k in order], self.decoding.max_new_tokens,
                                                                budget, self.batch_size)[0]]
            began = time.perf_counter()
            try:
                results = self.backend.generate([todo[k] for k in chunk], self.decoding)
            except oom_errors():
                free_accelerator_memory()
                if self_scheduling or len(chunk) == 1 or halvings >= MAX_OOM_HALVINGS:
                    raise
                halvings += 1
                used = len(chunk) * (lengths[chunk[0]] + self.decoding.max_new_tokens)
                budget = used // 2
                self.stats.oom_halvings = halvings
                self.stats.token_budget = budget
                continue
            finally:
                self.stats.seconds += time.perf_counter() - began
            rows = []
            for k, (text, n_tokens) in zip(chunk, results, strict=True):
                found[k] = text
                self._generated.add(k)
                self.stats.generated += 1
                self.stats.new_tokens += n_tokens
                rows.append((k, self.backend.model_id, decoding_json, messages_key(todo[k]), text, n_tokens))
            self.cache.put_many(rows)
            self.stats.batches += 1
            done = set(chunk)
            order = [k for k in order if k not in done]
            if bar is not None:
                bar.update(len(chunk))
        if bar is not None:
            bar.close()
