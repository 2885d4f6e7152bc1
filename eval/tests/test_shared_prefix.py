"""The hf backend prefills the tokens a batch's prompts share (the system
message) once and repeats their KV cache over the batch. Greedy replies must be the ones the
plain left-padded batch gives (tiny random-weight models of the paper's architectures in
float32; the smoke preset's 234 prompts are checked byte for byte in docs/eval.md)."""

from __future__ import annotations

import random

import pytest
import torch

from dpmem_eval.gpu.archs import PAPER_ARCHS, build_model, tiny
from dpmem_eval.gpu.synthetic import word_tokenizer
from dpmem_eval.pipeline.backends import DecodingConfig
from dpmem_eval.pipeline.backends.hf import MIN_SHARED_PREFIX, HFBackend, shared_prefix_length


def test_shared_prefix_length_keeps_a_token_of_each_prompt():
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5, 6]]) == 3
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3, 4]]) == 2  # the shorter keeps its last token
    assert shared_prefix_length([[7, 2], [1, 2]]) == 0
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2


def _prompts(vocab: int, count: int = 7) -> list[list[dict[str, str]]]:
    rng = random.Random(3)
    system = " ".join(f"w{rng.randrange(10, vocab)}" for _ in range(MIN_SHARED_PREFIX + 6))
    out = []
    for i in range(count):  # the same system message, then conditioning and queries of different lengths
        extra = " ".join(f"w{rng.randrange(10, vocab)}" for _ in range(i % 4))
        query = " ".join(f"w{rng.randrange(10, vocab)}" for _ in range(2 + i % 3))
        out.append([{"role": "system", "content": f"{system} {extra}".strip()}, {"role": "user", "content": query}])
    return out


@pytest.mark.parametrize("name", list(PAPER_ARCHS))
def test_shared_prefix_prefill_gives_the_plain_batchs_greedy_replies(name, monkeypatch):
    config = tiny(PAPER_ARCHS[name])
    model = build_model(config, dtype=torch.float32)
    model.generation_config.eos_token_id = None
    prompts = _prompts(config["vocab_size"])
    decoding = DecodingConfig(max_new_tokens=6)
    plain = HFBackend.from_loaded(model, word_tokenizer(config["vocab_size"]), "tiny", batch_size=8)
    plain.shared_prefix = False
    shared = HFBackend.from_loaded(model, word_tokenizer(config["vocab_size"]), "tiny", batch_size=8)
    assert shared._prefix_sharing()  # on by default on a CPU in float32
    used = []
    original = HFBackend._generate_from_prefix
    monkeypatch.setattr(HFBackend, "_generate_from_prefix", lambda self, *a: used.append(a[1]) or original(self, *a))
    assert shared.generate(prompts, decoding) == plain.generate(prompts, decoding)
    assert used and used[0] >= MIN_SHARED_PREFIX


def test_shared_prefix_is_off_in_bfloat16_and_for_a_single_prompt(monkeypatch):
    config = tiny(PAPER_ARCHS["Qwen/Qwen2.5-7B-Instruct"])
    backend = HFBackend.from_loaded(build_model(config, dtype=torch.bfloat16), word_tokenizer(config["vocab_size"]), "tiny")
    assert not backend._prefix_sharing()
    fp32 = HFBackend.from_loaded(build_model(config, dtype=torch.float32), word_tokenizer(config["vocab_size"]), "tiny")
    monkeypatch.setattr(HFBackend, "_generate_from_prefix", lambda *a: pytest.fail("one prompt shares nothing"))
    assert len(fp32.generate(_prompts(config["vocab_size"], 1), DecodingConfig(max_new_tokens=2))) == 1
