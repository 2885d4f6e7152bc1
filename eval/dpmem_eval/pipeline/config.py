"""Run configuration: presets, a TOML file, and the command line (CLI > file > preset).

Presets (docs/eval.md has the measured times):
- smoke: every method and every table end to end on a 2-core CPU in minutes; one pair per
  attribute and split, T=2, one EM seed, 12 new tokens, no transcript prefix in the prompt
  (history_turns=0), SmolLM2-135M-Instruct, MiniLM auditor, proxy judge. It tests the
  pipeline; its numbers mean nothing.
- cpu: a meaningful auditor on a CPU (about 1-1.5 h on 2 cores): every PairedMem pair
  (48/16/16 train/val/test per attribute) and 20 transfer pairs per attribute, T=8, EM seeds
  {0,1,2}, 32 new tokens, no transcript prefix in the prompt (history_turns=0: prefill
  dominates on a CPU, and without a prefix identical (conditioning, query) prompts are
  generated once - 7,521 distinct generations instead of ~211,000 prompts).
- paper: the paper's setting on one GPU: all 320 pairs and 80 transfer pairs, T=16, seeds
  {0,1,2}, the three 7-9B instruct models (bf16), all-mpnet-base-v2, 256 new tokens, full
  transcript prefix. The judge must be named (`--judge openai:URL#MODEL` for the paper's
  hosted judge, or `local:MODEL`); otherwise the proxy is used and labelled as such.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from dpmem_eval.errors import UserError, short

PAPER_RESPONSE_MODELS = ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "google/gemma-2-9b-it")


class ConfigError(UserError):
    """A bad configuration value: names the field, what was expected and what was found."""

    def __init__(self, field_name: str, expected: str, found: object) -> None:
        self.field, self.expected, self.found = field_name, expected, found
        super().__init__(" ".join(f"{field_name}: expected {expected}, found {short(found)}".splitlines()))


@dataclass(frozen=True)
class RunConfig:
    preset: str
    train_pairs: int | None  # per attribute; None = all
    validation_pairs: int | None
    test_pairs: int | None
    transfer_pairs: int | None
    horizon: int
    seeds: tuple[int, ...]
    caps: tuple[int, ...] = (1, 2, 4, 8)
    ks: tuple[int, ...] = (2, 3, 4)
    models: tuple[str, ...] = ("smollm2",)
    backend: str = "hf"
    max_new_tokens: int = 256
    temperature: float = 0.0
    history_turns: int | None = None
    batch_size: int = 16
    encoder: str = "minilm"
    judge: str = "proxy"
    pairwise: bool = False
    pairwise_model: str | None = None
    n_boot: int = 1000
    data_seed: int = 0
    data_dir: str | None = None
    corpora_dir: str | None = None
    cache_dir: str | None = None
    seed: int = 0
    progress: bool = True
    methods: tuple[str, ...] | None = None  # method keys to run (None = all; see methods.all_methods)
    # Engine settings (docs/eval.md, "GPU"): None = the backend's default for the device.
    tensor_parallel_size: int = 1  # vLLM: GPUs one model is spread over
    device_map: str | None = None  # hf: "auto" on CUDA, none on CPU; or cpu, cuda, cuda:N, auto, balanced, sequential
    dtype: str | None = None  # hf/vLLM: bfloat16 on CUDA, float32 on CPU
    token_budget: int | None = None  # tokens per batch (prompt + new, padded); None = from the memory plan

    def validate(self) -> RunConfig:
        if self.horizon < 1 or self.horizon > 32:
            raise ConfigError("horizon", "an integer in 1..32 (two 16-query blocks)", self.horizon)
        if not self.seeds:
            raise ConfigError("seeds", "at least one EM seed", self.seeds)
        if 2 not in self.caps or 3 not in self.ks:
            raise ConfigError("caps/ks", "a grid containing the main setting B_a=2, K=3", (self.caps, self.ks))
        if self.backend not in ("hf", "vllm", "echo"):
            raise ConfigError("backend", "one of hf, vllm, echo", self.backend)
        if not (self.judge in ("proxy", "checklist") or self.judge.startswith(("local:", "openai:"))):
            raise ConfigError("judge", "proxy, checklist, local:MODEL or openai:URL#MODEL", self.judge)
        if self.judge.startswith("openai:") and "#" not in self.judge:
            raise ConfigError("judge", "openai:URL#MODEL (the model name after '#')", self.judge)
        for name in ("train_pairs", "validation_pairs", "test_pairs", "transfer_pairs"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(name, "a non-negative count or 'all'", value)
        for name in ("train_pairs", "validation_pairs", "test_pairs"):
            if getattr(self, name) == 0:
                raise ConfigError(name, "at least one pair per attribute (the auditor needs train, validation and test)", 0)
        if self.max_new_tokens < 1:
            raise ConfigError("max_new_tokens", "a positive integer", self.max_new_tokens)
        if self.methods is not None:
            from dpmem_eval.pipeline.methods import all_methods

            known = [m.key for m in all_methods(self.caps, self.ks)]
            unknown = [m for m in self.methods if m not in known]
            if unknown or not self.methods:
                raise ConfigError("methods", f"method keys among {known}", list(self.methods))
        if self.batch_size < 1:
            raise ConfigError("batch_size", "a positive integer", self.batch_size)
        if self.tensor_parallel_size < 1:
            raise ConfigError("tensor_parallel_size", "a positive integer", self.tensor_parallel_size)
        if self.tensor_parallel_size > 1 and self.backend != "vllm":
            raise ConfigError("tensor_parallel_size", "1 unless --backend vllm (hf spreads a model with --device-map auto)",
                              self.tensor_parallel_size)
        if self.dtype is not None and self.dtype not in DTYPES:
            raise ConfigError("dtype", f"one of {', '.join(DTYPES)}", self.dtype)
        if self.device_map is not None and not (self.device_map in DEVICE_MAPS or self.device_map.startswith("cuda:")):
            raise ConfigError("device_map", f"one of {', '.join(DEVICE_MAPS)} or cuda:N", self.device_map)
        if self.token_budget is not None and self.token_budget < 1:
            raise ConfigError("token_budget", "a positive number of tokens", self.token_budget)
        return self

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


DTYPES = ("bfloat16", "float16", "float32")
DEVICE_MAPS = ("auto", "balanced", "sequential", "cpu", "cuda")

PRESETS: dict[str, RunConfig] = {
    "smoke": RunConfig(preset="smoke", train_pairs=1, validation_pairs=1, test_pairs=1, transfer_pairs=1,
                       horizon=2, seeds=(0,), max_new_tokens=12, history_turns=0, batch_size=48, n_boot=100),
    "cpu": RunConfig(preset="cpu", train_pairs=None, validation_pairs=None, test_pairs=None, transfer_pairs=20,
                     horizon=8, seeds=(0, 1, 2), max_new_tokens=32, history_turns=0, batch_size=64, n_boot=1000),
    "paper": RunConfig(preset="paper", train_pairs=None, validation_pairs=None, test_pairs=None, transfer_pairs=None,
                       horizon=16, seeds=(0, 1, 2), models=PAPER_RESPONSE_MODELS, max_new_tokens=256,
                       history_turns=None, batch_size=64, encoder="mpnet", pairwise=True,
                       pairwise_model="mistralai/Mistral-Small-24B-Instruct-2501", n_boot=1000),
}

_FIELD_TYPES = {f.name: f.type for f in fields(RunConfig)}

SEED_MAX = 2**32 - 1  # numpy's legacy seeding: --seed seeds python, numpy and torch
EM_SEED_MAX = 2**63 - 1  # EM and data seeds (the same bounds as readers.check_config)
# Every integer field's range: the value a run can use, refused past it with one line
# (a huge count or seed would fail deep inside numpy, torch or a loop, not here).
INT_RANGES: dict[str, tuple[int, int]] = {
    "horizon": (1, 32),
    "max_new_tokens": (1, 1 << 20),
    "batch_size": (1, 65_536),
    "n_boot": (1, 1_000_000),
    "data_seed": (0, EM_SEED_MAX),
    "seed": (0, SEED_MAX),
    "tensor_parallel_size": (1, 1_024),
    "token_budget": (1, 1_000_000_000),
    "train_pairs": (0, 1_000_000),
    "validation_pairs": (0, 1_000_000),
    "test_pairs": (0, 1_000_000),
    "transfer_pairs": (0, 1_000_000),
    "history_turns": (0, 1_000_000),
}
LIST_RANGES: dict[str, tuple[int, int]] = {"seeds": (0, EM_SEED_MAX), "caps": (1, 1_000), "ks": (1, 1_000)}
MAX_LIST = 1_000  # entries of seeds, caps, ks, models or methods
MAX_TEXT = 4_096  # characters of a string field (a model id, a path, a judge URL)


def _integer(name: str, value: Any) -> int:
    """An integer (or its decimal text, from the command line): never a bool, a float (1.5
    is not a count; inf and nan are not numbers) or text past int()'s digit limit."""
    if isinstance(value, str):
        text = value.strip()
        if not (1 <= len(text) <= 20 and text.lstrip("+-").isdigit() and text.lstrip("+-").isascii()):
            raise ConfigError(name, "an integer", value if len(value) <= 40 else f"{len(value)} characters")
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, "an integer", type(value).__name__ if not isinstance(value, float) else value)
    return value


def _in_range(name: str, value: int, bounds: tuple[int, int]) -> int:
    low, high = bounds
    if not low <= value <= high:
        raise ConfigError(name, f"an integer in {low}..{high}", value if abs(value) < 10**30 else "a larger one")
    return value


def _names(name: str, value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and 0 < len(v) <= MAX_TEXT for v in value):
        raise ConfigError(name, f"a list of {what}", type(value).__name__)
    if len(value) > MAX_LIST:
        raise ConfigError(name, f"at most {MAX_LIST} entries", len(value))
    return tuple(value)


def _coerce(name: str, value: Any) -> Any:
    if name not in _FIELD_TYPES or name == "preset":
        raise ConfigError(f"run.{name}", f"one of {sorted(k for k in _FIELD_TYPES if k != 'preset')}", name)
    if name in LIST_RANGES:
        if isinstance(value, str):
            value = [v for v in value.replace(",", " ").split() if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(name, "a list of integers", type(value).__name__)
        if len(value) > MAX_LIST:
            raise ConfigError(name, f"at most {MAX_LIST} entries", len(value))
        return tuple(_in_range(name, _integer(name, v), LIST_RANGES[name]) for v in value)
    if name == "methods":
        if value in (None, "all"):
            return None
        return _names(name, value, "method keys")
    if name == "models":
        return _names(name, value, "model names")
    if name in ("train_pairs", "validation_pairs", "test_pairs", "transfer_pairs", "history_turns"):
        if value in (None, "all", "none", "full"):
            return None
        return _in_range(name, _integer(name, value), INT_RANGES[name])
    if name == "token_budget" and value in (None, "auto"):
        return None
    if name in INT_RANGES:
        return _in_range(name, _integer(name, value), INT_RANGES[name])
    if name == "temperature":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(name, "a number", type(value).__name__)
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(name, "a number", value if len(str(value)) <= 40 else "a long text") from None
        if not (math.isfinite(number) and 0 <= number <= 100):
            raise ConfigError(name, "a finite number in [0, 100]", value)
        return number
    if name in ("pairwise", "progress"):
        if not isinstance(value, bool):
            raise ConfigError(name, "true or false", value)
        return value
    if value is not None and not isinstance(value, str):
        raise ConfigError(name, "a string", type(value).__name__)
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise ConfigError(name, f"a string of at most {MAX_TEXT} characters", f"{len(value)} characters")
    if name in ("backend", "encoder", "judge") and not value:
        raise ConfigError(name, "a non-empty string", value)
    if isinstance(value, str) and not value:
        raise ConfigError(name, "a non-empty string (or leave it out)", value)
    return value


def resolve(preset: str, file: str | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Preset defaults, then the [run] table of a TOML file, then command-line overrides."""
    if preset not in PRESETS:
        raise ConfigError("--preset", f"one of {sorted(PRESETS)}", preset)
    config = PRESETS[preset]
    if file is not None:
        from dpmem_eval.readers import InputFileError, display, read_bytes
        from dpmem_ref.config.toml_bounds import load_toml
        from dpmem_ref.core.errors import InputError
        from dpmem_ref.core.limits import MAX_CONFIG_BYTES

        path = Path(file)
        try:  # bounded: a regular file of at most 1 MiB, pre-scanned (depth, keys, dotted parts) before parsing
            data = load_toml(read_bytes(path, limit=MAX_CONFIG_BYTES), f"--config {display(path)}")
        except InputFileError as exc:
            raise ConfigError("--config", "a readable TOML file of at most 1 MiB", str(exc)) from None
        except InputError as exc:  # names the file and the line; quotes nothing from the file
            raise ConfigError(exc.field, exc.expected, exc.found) from None
        table = data.get("run", data)
        if not isinstance(table, dict):
            raise ConfigError("--config [run]", "a table", type(table).__name__)
        config = replace(config, **{k: _coerce(k, v) for k, v in table.items()})
    if overrides:
        config = replace(config, **{k: _coerce(k, v) for k, v in overrides.items() if v is not None})
    return config.validate()
