"""GPU memory plan and throughput projection, computed from the models' configurations.

Memory of one stage = weights (parameters x bytes) + KV cache of the batch (per sequence:
layers x kv_heads x head_dim x 2 x bytes x tokens; `archs.Shape.kv_bytes`) + an activation
margin (the prefill transient of one layer: the batch's tokens x (3 x intermediate + 4 x
hidden) x bytes, plus eager attention's score matrices where the model uses eager attention
(Gemma-2 in transformers: batch x heads x P^2 x 6 bytes, bf16 scores and their fp32
softmax), plus the last-token logits in fp32, plus a fixed 1 GiB for the CUDA context).

Prompt lengths of the paper preset come from the data (measured: system message <= 400
characters, queries <= 62 characters; about 4 characters a token) and the chat template
overhead: turn t of a transcript carries the t-1 earlier (query, response) turns.

The projection of Table 2's wall time is a roofline model (prefill compute-bound, decode
bandwidth-bound) with stated efficiencies: it is PROJECTED, NOT MEASURED.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpmem_eval.gpu.archs import ALL_ARCHS, PAIRWISE_ARCHS, PAPER_ARCHS, Shape

GIB = 1024**3
CUDA_CONTEXT_BYTES = 1 * GIB


@dataclass(frozen=True)
class PromptShape:
    """Token counts of the paper preset's prompts (upper ends of the data's lengths)."""

    system: int = 100  # instruction + conditioning lines (<= 400 characters)
    query: int = 16  # <= 62 characters
    per_message: int = 8  # chat-template tokens around one message
    max_new: int = 256
    turns: int = 16

    def response_prompt(self, turn: int) -> int:
        """Prompt tokens of turn `turn` (1-based) with the full prefix tau_<t (Eq. 2)."""
        earlier = (turn - 1) * (self.query + self.max_new + 2 * self.per_message)
        return self.system + self.per_message + earlier + self.query + self.per_message + 4

    def pairwise_prompt(self) -> int:
        """Two whole transcripts and the question (judge.pairwise_prompt)."""
        return 150 + 2 * self.turns * (self.query + self.max_new + 10)

    def judge_prompt(self) -> int:
        """One transcript, the rubric and its behaviour checklist (judge.judge_prompt)."""
        return 400 + self.turns * (self.query + self.max_new + 10)


PAPER_PROMPTS = PromptShape()
PAPER_BATCH = 64
H200_BYTES = 141 * 10**9  # HBM3e capacity (about 131 GiB usable after the driver's share)
H200_BANDWIDTH = 4.8e12  # bytes/s
H200_BF16_FLOPS = 989e12  # dense
A100_80GB_BYTES = 80 * 10**9  # the paper's GPU (HBM2e)
A100_80GB_BANDWIDTH = 2.039e12  # bytes/s (SXM)
A100_80GB_BF16_FLOPS = 312e12  # dense
GPUS = {"H200": (H200_BYTES, H200_BF16_FLOPS, H200_BANDWIDTH),
        "A100-80GB": (A100_80GB_BYTES, A100_80GB_BF16_FLOPS, A100_80GB_BANDWIDTH)}
"""Memory, dense bf16 FLOP/s and bandwidth of each GPU the plan covers (one column pair each)."""
PREFILL_EFFICIENCY = 0.5  # fraction of peak FLOP/s reached in prefill
DECODE_EFFICIENCY = 0.6  # fraction of peak bandwidth reached in decode
GENERATING_SETS = 33
"""Transcript sets per pair side of the paper preset: 6 deterministic methods plus 9
stochastic configurations x 3 EM seeds (tests check it against methods.all_methods)."""
PAPER_PAIRS = 400  # 320 PairedMem + 80 transfer
PAPER_TEST_PAIRS = 64
PAPER_JUDGED_PAIRS = 144  # test + transfer


def eager_attention(config: dict[str, Any]) -> bool:
    """transformers runs Gemma-2 with eager attention (its soft-capping needs it)."""
    return bool(config["model_type"] == "gemma2")


@dataclass(frozen=True)
class StagePlan:
    model: str
    stage: str
    batch: int
    prompt_tokens: int
    new_tokens: int
    weights_bytes: int
    kv_bytes: int
    activation_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.activation_bytes

    def row(self) -> list[str]:
        def gb(n: int) -> str:
            return f"{n / 1e9:.1f}"

        return [self.model, self.stage, str(self.batch), f"{self.prompt_tokens}+{self.new_tokens}", gb(self.weights_bytes),
                gb(self.kv_bytes), gb(self.activation_bytes), gb(self.total_bytes)]


def per_sequence_bytes(config: dict[str, Any], prompt_tokens: int, new_tokens: int, dtype_bytes: int = 2) -> int:
    """Memory one more sequence of the batch costs: its KV cache, its share of one layer's
    prefill transient, eager attention's scores, its fp32 last-token logits."""
    shape = Shape.of(config)
    kv = shape.kv_bytes(prompt_tokens + new_tokens, dtype_bytes)
    transient = prompt_tokens * (3 * shape.intermediate + 4 * shape.hidden) * dtype_bytes
    scores = shape.heads * prompt_tokens * prompt_tokens * 6 if eager_attention(config) else 0
    return kv + transient + scores + shape.vocab * 4


def stage_plan(model: str, stage: str, batch: int, prompt_tokens: int, new_tokens: int, dtype_bytes: int = 2) -> StagePlan:
    config = ALL_ARCHS[model]
    shape = Shape.of(config)
    kv = batch * shape.kv_bytes(prompt_tokens + new_tokens, dtype_bytes)
    activations = batch * per_sequence_bytes(config, prompt_tokens, new_tokens, dtype_bytes) - kv + CUDA_CONTEXT_BYTES
    return StagePlan(model, stage, batch, prompt_tokens, new_tokens, shape.parameters * dtype_bytes, kv, activations)


def paper_plans(prompts: PromptShape = PAPER_PROMPTS, batch: int = PAPER_BATCH) -> list[StagePlan]:
    """Every GPU stage of the paper preset at its batch: generation at turn 16 (the longest
    prompt) for each response model, the pairwise auditor, and a local LLM judge run with
    the response model (`--judge local:MODEL`)."""
    plans = []
    for model in PAPER_ARCHS:
        plans.append(stage_plan(model, "generation (turn 16)", batch, prompts.response_prompt(prompts.turns), prompts.max_new))
    for model in PAPER_ARCHS:
        plans.append(stage_plan(model, "local judge", batch, prompts.judge_prompt(), 256))
    for model in PAIRWISE_ARCHS:
        plans.append(stage_plan(model, "pairwise auditor", batch, prompts.pairwise_prompt(), 4))
    return plans


def max_batch(config: dict[str, Any], memory_bytes: int, prompt_tokens: int, new_tokens: int, dtype_bytes: int = 2,
              usable_fraction: float = 0.9) -> int:
    """The largest batch of `prompt_tokens`-token prompts that fits in `memory_bytes` (0: the
    weights alone do not fit)."""
    weights = Shape.of(config).parameters * dtype_bytes
    free = int(memory_bytes * usable_fraction) - weights - CUDA_CONTEXT_BYTES
    return max(free // per_sequence_bytes(config, prompt_tokens, new_tokens, dtype_bytes), 0)


def token_budget(config: dict[str, Any], free_bytes: int, prompt_tokens: int, new_tokens: int, dtype_bytes: int = 2,
                 usable_fraction: float = 0.9) -> int:
    """Tokens (prompt + new, padded to the batch's longest prompt) that fit in `free_bytes`
    of device memory left after the weights, at prompts of about `prompt_tokens` tokens."""
    usable = int(free_bytes * usable_fraction)
    per_token = per_sequence_bytes(config, prompt_tokens, new_tokens, dtype_bytes) / (prompt_tokens + new_tokens)
    return max(int(usable / per_token), prompt_tokens + new_tokens)


def markdown_table(plans: list[StagePlan], gpus: tuple[str, ...] = ("H200", "A100-80GB")) -> str:
    """Memory per model and stage, with "fits" and "largest batch" columns per GPU of `GPUS`."""
    header = ["model", "stage", "batch", "tokens/seq (prompt+new)", "weights GB (bf16)", "KV cache GB",
              "activations GB", "total GB"]
    for gpu in gpus:
        header += [f"fits one {gpu} ({GPUS[gpu][0] / 1e9:.0f} GB)", f"largest batch on one {gpu}"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for plan in plans:
        cells = plan.row()
        for gpu in gpus:
            capacity = GPUS[gpu][0]
            fits = "yes" if plan.total_bytes <= capacity * 0.9 else "no"
            largest = max_batch(ALL_ARCHS[plan.model], capacity, plan.prompt_tokens, plan.new_tokens)
            cells += [fits, str(largest)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- throughput projection (roofline) -------------------------------------------------------


def generation_seconds(config: dict[str, Any], prompt_tokens: int, new_tokens: int, batch: int,
                       flops: float = H200_BF16_FLOPS, bandwidth: float = H200_BANDWIDTH, cached_tokens: int = 0) -> float:
    """Seconds for one batch: prefill at PREFILL_EFFICIENCY of peak FLOP/s (2 x params per
    token + causal attention 2 x layers x heads x head_dim x P^2), then `new_tokens` decode
    steps each bound by max(bytes moved, FLOPs) (weights once + the batch's KV cache).
    `cached_tokens` of the prompt come from a prefix cache (vLLM): not recomputed."""
    shape = Shape.of(config)
    attention = 2 * shape.layers * shape.heads * shape.head_dim
    fresh = prompt_tokens - cached_tokens
    prefill = batch * (2 * shape.parameters * fresh + attention * (prompt_tokens**2 - cached_tokens**2))
    seconds = prefill / (flops * PREFILL_EFFICIENCY)
    weights = shape.parameters * 2
    for step in range(0, new_tokens, 16):  # 16-step blocks: the KV cache grows slowly
        context = prompt_tokens + step
        moved = weights + batch * shape.kv_bytes(context)
        work = batch * (2 * shape.parameters + 2 * attention * context)
        steps = min(16, new_tokens - step)
        seconds += steps * max(moved / (bandwidth * DECODE_EFFICIENCY), work / (flops * PREFILL_EFFICIENCY))
    return seconds


def projected_table2_hours(prompts: PromptShape = PAPER_PROMPTS, memory_bytes: int = H200_BYTES,
                           batch_cap: int = PAPER_BATCH, prefix_cache: bool = False, flops: float = H200_BF16_FLOPS,
                           bandwidth: float = H200_BANDWIDTH) -> dict[str, float]:
    """Projected hours per stage on one GPU for the paper preset (every transcript set, full
    prefix, batch min(batch_cap, what fits); `prefix_cache`: turn t reuses turn t-1's prompt
    and response from a prefix cache, as vLLM does). PROJECTED, NOT MEASURED."""
    out: dict[str, float] = {}
    per_turn = PAPER_PAIRS * 2 * GENERATING_SETS
    for model, config in PAPER_ARCHS.items():
        seconds = 0.0
        for turn in range(1, prompts.turns + 1):
            p = prompts.response_prompt(turn)
            batch = max(min(batch_cap, max_batch(config, memory_bytes, p, prompts.max_new)), 1)
            cached = prompts.response_prompt(turn - 1) + prompts.max_new if prefix_cache and turn > 1 else 0
            seconds += per_turn / batch * generation_seconds(config, p, prompts.max_new, batch, flops, bandwidth,
                                                             cached_tokens=min(cached, p))
        out[f"generation {model}"] = seconds / 3600
    pairwise_model, pairwise_config = next(iter(PAIRWISE_ARCHS.items()))
    p = prompts.pairwise_prompt()
    batch = max(min(batch_cap, max_batch(pairwise_config, memory_bytes, p, 4)), 1)
    jobs = len(PAPER_ARCHS) * GENERATING_SETS * PAPER_TEST_PAIRS
    out[f"pairwise {pairwise_model}"] = jobs / batch * generation_seconds(pairwise_config, p, 4, batch, flops, bandwidth) / 3600
    out["total"] = sum(out.values())
    return out


def main() -> None:
    """`python -m dpmem_eval.gpu.memory_plan`: the docs/eval.md table and projection."""
    print(markdown_table(paper_plans()))
    for label, hours in (("batch 64, no prefix cache", projected_table2_hours()),
                         ("batch <= 256, prefix cache", projected_table2_hours(batch_cap=256, prefix_cache=True))):
        print(f"\n{label}: " + ", ".join(f"{k} {v:.1f} h" for k, v in hours.items()))
    print(f"\n{a100_line()}")


def a100_line() -> str:
    """The same projection on one A100-80GB (the paper's GPU), batch 64, no prefix cache."""
    memory, flops, bandwidth = GPUS["A100-80GB"]
    hours = projected_table2_hours(memory_bytes=memory, flops=flops, bandwidth=bandwidth)
    return "one A100-80GB, batch <= 64, no prefix cache: " + ", ".join(f"{k} {v:.1f} h" for k, v in hours.items())


if __name__ == "__main__":
    main()
