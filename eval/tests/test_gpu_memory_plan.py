"""The memory plan and throughput projection (gpu/memory_plan.py) computed from the paper
models' published configurations, and the docs table generated from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpmem_eval.gpu import memory_plan as plan
from dpmem_eval.gpu.archs import ALL_ARCHS, GEMMA2_9B, LLAMA31_8B, PAPER_ARCHS, QWEN25_7B, Shape, build_model, tiny

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("config", "published_billions"), [(QWEN25_7B, 7.62), (LLAMA31_8B, 8.03), (GEMMA2_9B, 9.24)])
def test_parameter_count_matches_the_published_size(config, published_billions):
    assert Shape.of(config).parameters / 1e9 == pytest.approx(published_billions, abs=0.01)


@pytest.mark.parametrize("name", list(PAPER_ARCHS))
def test_shape_counts_the_parameters_transformers_builds(name):
    """The formula against the real class, on the tiny version of the same architecture."""
    config = tiny(PAPER_ARCHS[name])
    model = build_model(config)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(Shape.of(config).parameters, rel=0.02)


def test_kv_cache_formula():
    # layers x kv_heads x head_dim x 2 (K, V) x 2 bytes per token
    assert Shape.of(LLAMA31_8B).kv_bytes(1) == 32 * 8 * 128 * 2 * 2
    assert Shape.of(QWEN25_7B).kv_bytes(1000) == 28 * 4 * 128 * 2 * 2 * 1000
    # Gemma-2: 21 of 42 layers keep only the 4096-token window
    gemma = Shape.of(GEMMA2_9B)
    assert gemma.kv_bytes(4096) == 42 * 8 * 256 * 2 * 2 * 4096
    assert gemma.kv_bytes(8192) == 8 * 256 * 2 * 2 * (21 * 8192 + 21 * 4096)


def test_prompt_shape_grows_with_the_prefix():
    shape = plan.PAPER_PROMPTS
    assert shape.response_prompt(1) < 200
    assert 4000 < shape.response_prompt(16) < 5000  # 15 earlier turns of <= 256 new tokens
    assert 8500 < shape.pairwise_prompt() < 10000  # two 16-turn transcripts (the issue's ~9k)


def test_gemma_at_the_paper_batch_does_not_fit_24_gb_nor_one_h200():
    """The corrected docs statement: Gemma-2-9B at batch 64 with the full prefix is far beyond 24 GB."""
    gemma = plan.stage_plan("google/gemma-2-9b-it", "generation", 64, plan.PAPER_PROMPTS.response_prompt(16), 256)
    assert gemma.total_bytes > plan.H200_BYTES
    assert gemma.kv_bytes > 90e9
    assert plan.max_batch(GEMMA2_9B, 24 * 10**9, plan.PAPER_PROMPTS.response_prompt(16), 256) == 0
    assert plan.max_batch(GEMMA2_9B, plan.H200_BYTES, plan.PAPER_PROMPTS.response_prompt(1), 256) >= 64


def test_token_budget_shrinks_with_memory_and_prompt_length():
    long, short = plan.PAPER_PROMPTS.response_prompt(16), plan.PAPER_PROMPTS.response_prompt(1)
    big = plan.token_budget(LLAMA31_8B, 100 * 10**9, long, 256)
    assert plan.token_budget(LLAMA31_8B, 50 * 10**9, long, 256) < big
    # the per-token cost of a long prompt is higher (prefill transient); Gemma's eager scores more so
    assert plan.token_budget(GEMMA2_9B, 100 * 10**9, long, 256) < plan.token_budget(GEMMA2_9B, 100 * 10**9, short, 256)


def test_generating_sets_match_the_methods_of_the_paper_preset():
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.config import PRESETS

    paper = PRESETS["paper"]
    sets = sum(len(paper.seeds) if m.stochastic else 1 for m in M.all_methods(paper.caps, paper.ks) if m.generates)
    assert sets == plan.GENERATING_SETS
    assert set(paper.models) == set(PAPER_ARCHS)
    assert paper.pairwise_model in ALL_ARCHS


def test_projection_is_positive_and_prefix_cache_helps():
    plain = plan.projected_table2_hours()
    cached = plan.projected_table2_hours(prefix_cache=True)
    assert plain["total"] > 0
    assert cached["total"] < plain["total"]
    assert plain["total"] == pytest.approx(sum(v for k, v in plain.items() if k != "total"))


def test_docs_memory_table_is_the_function_output():
    docs = (ROOT / "docs" / "eval.md").read_text()
    assert plan.markdown_table(plan.paper_plans()) in docs
    hours = plan.projected_table2_hours()
    assert f"{hours['total']:.0f} h" in docs
