"""The GPU code paths on a CPU: tiny random-weight Qwen2 / Llama / Gemma-2 models built from
config dicts in bf16, driven through HFBackend and CachedGenerator (batching by a token
budget, out-of-memory halving, stage unload)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from dpmem_eval.gpu.archs import PAPER_ARCHS, build_model, tiny
from dpmem_eval.gpu.memory_plan import PromptShape
from dpmem_eval.gpu.synthetic import paper_shaped_prompts, word_tokenizer
from dpmem_eval.pipeline.backends import DecodingConfig, EchoBackend, rejects_system_role
from dpmem_eval.pipeline.backends.hf import HFBackend
from dpmem_eval.pipeline.batching import close_backend, token_budget_batches
from dpmem_eval.pipeline.cache import ResponseCache
from dpmem_eval.pipeline.generation import CachedGenerator

SHAPE = PromptShape(system=10, query=3, per_message=8, max_new=4, turns=6)


def test_batches_respect_count_and_token_budget():
    lengths = [100, 90, 50, 40, 10, 10, 10]
    groups = token_budget_batches(lengths, 10, 250, 8)
    assert [i for g in groups for i in g] == list(range(len(lengths)))
    for group in groups:
        assert len(group) == 1 or len(group) * (lengths[group[0]] + 10) <= 250
    assert groups[0] == [0, 1]  # 2 x 110 fits, 3 x 110 does not
    assert token_budget_batches(lengths, 10, None, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert token_budget_batches([500, 5], 10, 100, 4) == [[0], [1]]  # too long alone: a batch of one


def _tiny_backend(name: str, budget: int | None = None) -> HFBackend:
    config = tiny(PAPER_ARCHS[name])
    model = build_model(config, dtype=torch.bfloat16)
    model.generation_config.eos_token_id = None
    return HFBackend.from_loaded(model, word_tokenizer(config["vocab_size"]), f"tiny:{name}", batch_size=8,
                                 token_budget=budget)


@pytest.mark.parametrize("name", list(PAPER_ARCHS))
def test_tiny_paper_architecture_generates_in_budgeted_batches_and_unloads(name, tmp_path):
    prompts = paper_shaped_prompts(SHAPE, 6, 5, tiny(PAPER_ARCHS[name])["vocab_size"])
    backend = _tiny_backend(name, budget=3 * (SHAPE.response_prompt(6) + SHAPE.max_new))
    assert backend.count_tokens(prompts[0]) == SHAPE.response_prompt(6)  # real tokenizer lengths
    assert next(backend._model.parameters()).dtype == torch.bfloat16
    generator = CachedGenerator(backend, ResponseCache(tmp_path / "c.sqlite"), DecodingConfig(max_new_tokens=SHAPE.max_new),
                                batch_size=8, progress=False, token_budget=backend.configured_token_budget)
    replies = generator.generate(prompts)
    assert len(replies) == 5 and all(r.split() for r in replies)
    assert generator.stats.batches == 2  # 3 + 2 under a budget of three sequences
    assert generator.stats.new_tokens == 5 * SHAPE.max_new
    ref = weakref.ref(backend._model)
    close_backend(backend)
    gc.collect()
    assert ref() is None, "the model object survived close()"


class OOMOverTokens(EchoBackend):
    """Echo backend whose 'device' holds `limit` padded tokens: over that, torch's OOM error
    (the only error the generator retries)."""

    def __init__(self, limit: int) -> None:
        super().__init__("oom")
        self.limit = limit
        self.batch_sizes: list[int] = []

    def count_tokens(self, messages):
        return sum(len(m["content"].split()) for m in messages)

    def generate(self, batch, decoding):
        widest = max(self.count_tokens(m) for m in batch)
        if len(batch) * (widest + decoding.max_new_tokens) > self.limit:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated device limit)")
        self.batch_sizes.append(len(batch))
        return super().generate(batch, decoding)


def _prompts(n: int, words: int):
    return [[{"role": "system", "content": "s"}, {"role": "user", "content": " ".join(f"q{i}" for _ in range(words))}]
            for i in range(n)]


def test_out_of_memory_halves_the_budget_and_finishes(tmp_path):
    backend = OOMOverTokens(limit=100)
    generator = CachedGenerator(backend, ResponseCache(tmp_path / "c.sqlite"), DecodingConfig(max_new_tokens=4),
                                batch_size=16, progress=False, token_budget=10_000)
    assert len(generator.generate(_prompts(12, 20))) == 12
    assert generator.stats.oom_halvings >= 1
    assert max(backend.batch_sizes) * (21 + 4) <= 100


def test_a_single_prompt_that_does_not_fit_is_an_error(tmp_path):
    generator = CachedGenerator(OOMOverTokens(limit=10), ResponseCache(tmp_path / "c.sqlite"), DecodingConfig(max_new_tokens=4),
                                batch_size=4, progress=False)
    with pytest.raises(torch.OutOfMemoryError):
        generator.generate(_prompts(3, 20))


def test_other_errors_are_not_retried(tmp_path):
    class Broken(EchoBackend):
        calls = 0

        def generate(self, batch, decoding):
            Broken.calls += 1
            raise ValueError("a real bug")

    generator = CachedGenerator(Broken(), ResponseCache(tmp_path / "c.sqlite"), DecodingConfig(), progress=False)
    with pytest.raises(ValueError, match="a real bug"):
        generator.generate(_prompts(3, 2))
    assert Broken.calls == 1


def test_gemma_style_template_without_system_role_is_folded_once():
    tokenizer = word_tokenizer(64)
    assert not rejects_system_role(tokenizer)
    tokenizer.chat_template = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
                               "{% endif %}{% for m in messages %}{{ m['content'] }} {% endfor %}")
    assert rejects_system_role(tokenizer)
    model = build_model(tiny(PAPER_ARCHS["google/gemma-2-9b-it"]))
    backend = HFBackend.from_loaded(model, tokenizer, "tiny:gemma")
    rendered = backend.render([{"role": "system", "content": "w10"}, {"role": "user", "content": "w11"}])
    assert rendered.split() == ["w10", "w11"]


def test_vllm_backend_without_vllm_is_one_clear_error():
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    from dpmem_eval.pipeline.backends import make_backend
    from dpmem_eval.pipeline.models import ModelNotFound

    with pytest.raises(ModelNotFound, match="vLLM is not installed"):
        make_backend("vllm", "Qwen/Qwen2.5-7B-Instruct", tensor_parallel_size=2)


def test_random_weights_are_drawn_from_the_seed_and_leave_the_callers_rng_alone():
    config = tiny(PAPER_ARCHS["google/gemma-2-9b-it"])
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    first, again = build_model(config, seed=0), build_model(config, seed=0)
    assert torch.equal(torch.rand(1), expected_next)  # the caller's RNG stream is untouched
    other = build_model(config, seed=1)
    weights = [dict(m.named_parameters()) for m in (first, again, other)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert any(not torch.equal(weights[0][k], weights[2][k]) for k in weights[0])
