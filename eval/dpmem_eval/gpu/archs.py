"""The architectures of the paper's models, copied from their published `config.json`.

Used to build random-weight models of the right shapes (no weights can be downloaded on a
lent GPU machine), to compute the memory plan and the throughput projection, and, in tiny
form (same classes, a few layers, small hidden size), to test the same code paths on a CPU.
Only the fields that decide shapes and numerics are kept; transformers fills the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# Qwen/Qwen2.5-7B-Instruct, config.json
QWEN25_7B: dict[str, Any] = {
    "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
    "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu",
    "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 28,
    "bos_token_id": 151643, "eos_token_id": 151645,
}
# meta-llama/Llama-3.1-8B-Instruct, config.json
LLAMA31_8B: dict[str, Any] = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "hidden_act": "silu",
    "tie_word_embeddings": False, "mlp_bias": False, "attention_bias": False,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
}
# google/gemma-2-9b-it, config.json (every other layer attends to a 4096-token window)
GEMMA2_9B: dict[str, Any] = {
    "model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 14336,
    "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
    "vocab_size": 256000, "max_position_embeddings": 8192, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "tie_word_embeddings": True,
    "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
}
# mistralai/Mistral-Small-24B-Instruct-2501, config.json (the pairwise auditor)
MISTRAL_SMALL_24B: dict[str, Any] = {
    "model_type": "mistral", "architectures": ["MistralForCausalLM"], "hidden_size": 5120, "intermediate_size": 32768,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 131072, "max_position_embeddings": 32768, "rope_theta": 100000000.0, "rms_norm_eps": 1e-5,
    "hidden_act": "silu", "tie_word_embeddings": False, "sliding_window": None,
    "bos_token_id": 1, "eos_token_id": 2,
}

PAPER_ARCHS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-7B-Instruct": QWEN25_7B,
    "meta-llama/Llama-3.1-8B-Instruct": LLAMA31_8B,
    "google/gemma-2-9b-it": GEMMA2_9B,
}
PAIRWISE_ARCHS: dict[str, dict[str, Any]] = {"mistralai/Mistral-Small-24B-Instruct-2501": MISTRAL_SMALL_24B}
ALL_ARCHS: dict[str, dict[str, Any]] = {**PAPER_ARCHS, **PAIRWISE_ARCHS}

_TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 16384}


def tiny(config: dict[str, Any]) -> dict[str, Any]:
    """The same architecture (class, activation, GQA, Gemma-2's window and soft-capping),
    a few layers and a small hidden size: for CPU tests of the GPU code path."""
    out = {**config, **_TINY}
    if "head_dim" in config:
        out["head_dim"] = 16
    if config["model_type"] == "gemma2":
        out["sliding_window"] = 32
        out["query_pre_attn_scalar"] = 16
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        out.pop(key, None)
    return out


@dataclass(frozen=True)
class Shape:
    """What the memory and FLOP model needs from a configuration."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    sliding_window: int | None  # Gemma-2: the window of every other layer

    @classmethod
    def of(cls, config: dict[str, Any]) -> Shape:
        head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        window = config.get("sliding_window") if config["model_type"] == "gemma2" else None
        return cls(config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"],
                   config["num_attention_heads"], config["num_key_value_heads"], head_dim, config["vocab_size"],
                   bool(config.get("tie_word_embeddings", False)), window)

    @property
    def parameters(self) -> int:
        """Weights: embeddings (+ LM head unless tied), attention (q, k, v, o; Qwen2's q/k/v
        biases are negligible and left out), gated MLP (3 matrices), norms."""
        attention = self.hidden * self.heads * self.head_dim * 2 + self.hidden * self.kv_heads * self.head_dim * 2
        mlp = 3 * self.hidden * self.intermediate
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return self.layers * (attention + mlp + 4 * self.hidden) + embeddings + self.hidden

    def kv_bytes(self, tokens: int, dtype_bytes: int = 2) -> int:
        """KV cache of one sequence of `tokens`: layers x kv_heads x head_dim x 2 (K and V) x
        bytes x tokens; Gemma-2's sliding layers (every other one) keep only the window."""
        per_layer_token = self.kv_heads * self.head_dim * 2 * dtype_bytes
        if self.sliding_window is None:
            return self.layers * per_layer_token * tokens
        sliding = self.layers // 2
        return per_layer_token * ((self.layers - sliding) * tokens + sliding * min(tokens, self.sliding_window))


def build_model(
    config: dict[str, Any], dtype: Any = None, device: Any = None, attn_implementation: str | None = None, seed: int = 0
) -> PreTrainedModel:
    """A random-weight causal LM from a config dict (transformers' own class for its
    `model_type`), created directly on `device` in `dtype` (no fp32 copy on the host).
    The weights are drawn from `seed` (the caller's torch RNG state is restored), so a
    check or test that generates with them is reproducible."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    data = dict(config)
    model_type = data.pop("model_type")
    hf_config = AutoConfig.for_model(model_type, **data)
    if attn_implementation is not None:
        hf_config._attn_implementation = attn_implementation
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype or torch.float32)
    target = torch.device(device or "cpu")
    forked = [target.index or 0] if target.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=forked), target:
            torch.manual_seed(seed)
            # transformers leaves from_config and eval unannotated (here and below).
            model: PreTrainedModel = AutoModelForCausalLM.from_config(hf_config)  # type: ignore[no-untyped-call]
    finally:
        torch.set_default_dtype(previous)
    model.eval()  # type: ignore[no-untyped-call]
    return model
