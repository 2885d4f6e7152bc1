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
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
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
        """Every field read through its entry of `FIELDS` (types, ranges, choices), then the
        rules that join fields. Presets, a --config file, the command line and a run.json
        read back all pass here."""
        checked = {name: field.read(name, getattr(self, name)) for name, field in FIELDS.items()}
        if 2 not in checked["caps"] or 3 not in checked["ks"]:
            raise ConfigError("caps/ks", "a grid containing the main setting B_a=2, K=3", (self.caps, self.ks))
        if checked["methods"] is not None:
            from dpmem_eval.pipeline.methods import all_methods

            known = [m.key for m in all_methods(checked["caps"], checked["ks"])]
            unknown = [m for m in checked["methods"] if m not in known]
            if unknown or not checked["methods"]:
                raise ConfigError("methods", f"method keys among {known}", list(checked["methods"]))
        if checked["tensor_parallel_size"] > 1 and checked["backend"] != "vllm":
            raise ConfigError("tensor_parallel_size", "1 unless --backend vllm (hf spreads a model with --device-map auto)",
                              self.tensor_parallel_size)
        return replace(self, **checked)

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

SEED_MAX = 2**32 - 1  # numpy's legacy seeding: --seed seeds python, numpy and torch
EM_SEED_MAX = 2**63 - 1  # EM and data seeds (a transcript row's seed is read back with the same bound)
MAX_COUNT = 1_000_000  # pairs per attribute and split, transcript turns in a prompt
MAX_LIST = 1_000  # entries of seeds, caps, ks, models or methods
MAX_TEXT = 4_096  # characters of a string field (a model id, a path, a judge URL)
BACKENDS = ("hf", "vllm", "echo")
UNSET_COUNT = ("all", "none", "full")
"""Words (besides leaving the value out) for "every pair" or "the full transcript"."""


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


def _in_range(name: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise ConfigError(name, f"an integer in {low}..{high}", value if abs(value) < 10**30 else "a larger one")
    return value


def _unset(value: Any, words: tuple[str, ...]) -> bool:
    """True when `value` leaves an optional field unset: None, or one of its words."""
    return value is None or (isinstance(value, str) and value in words)


@dataclass(frozen=True)
class Integer:
    """An integer in low..high (a count, a size, a seed); with `unset` words, also None."""

    low: int
    high: int
    unset: tuple[str, ...] | None = None  # None: the field is always set

    def __call__(self, name: str, value: Any) -> int | None:
        if self.unset is not None and _unset(value, self.unset):
            return None
        return _in_range(name, _integer(name, value), self.low, self.high)


@dataclass(frozen=True)
class Integers:
    """A list of integers in low..high: a list, or comma/space-separated text."""

    low: int
    high: int

    def __call__(self, name: str, value: Any) -> tuple[int, ...]:
        if isinstance(value, str):
            value = [v for v in value.replace(",", " ").split() if v]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(name, "a list of integers", type(value).__name__)
        if len(value) > MAX_LIST:
            raise ConfigError(name, f"at most {MAX_LIST} entries", len(value))
        return tuple(_in_range(name, _integer(name, v), self.low, self.high) for v in value)


@dataclass(frozen=True)
class Names:
    """A list of non-empty names (`what`): a list, or comma-separated text; with `unset`
    words, also None."""

    what: str
    unset: tuple[str, ...] | None = None

    def __call__(self, name: str, value: Any) -> tuple[str, ...] | None:
        if self.unset is not None and _unset(value, self.unset):
            return None
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and 0 < len(v) <= MAX_TEXT for v in value):
            raise ConfigError(name, f"a list of {self.what}", type(value).__name__)
        if len(value) > MAX_LIST:
            raise ConfigError(name, f"at most {MAX_LIST} entries", len(value))
        return tuple(value)


@dataclass(frozen=True)
class Number:
    """A finite number in [low, high] (a number or its text)."""

    low: float
    high: float

    def __call__(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(name, "a number", type(value).__name__)
        expected = f"a finite number in [{self.low:g}, {self.high:g}]"
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(name, "a number", value if len(str(value)) <= 40 else "a long text") from None
        except OverflowError:  # an integer past float's range
            raise ConfigError(name, expected, "a larger one") from None
        if not (math.isfinite(number) and self.low <= number <= self.high):
            raise ConfigError(name, expected, value)
        return number


@dataclass(frozen=True)
class Flag:
    """true or false (TOML booleans; the command line's switches give bools)."""

    def __call__(self, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(name, "true or false", value)
        return value


@dataclass(frozen=True)
class Text:
    """A string of 1..MAX_TEXT characters; unless `required`, also None (the default)."""

    required: bool = False

    def __call__(self, name: str, value: Any) -> str | None:
        if value is not None and not isinstance(value, str):
            raise ConfigError(name, "a string", type(value).__name__)
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise ConfigError(name, f"a string of at most {MAX_TEXT} characters", f"{len(value)} characters")
        if self.required and not value:
            raise ConfigError(name, "a non-empty string", value)
        if isinstance(value, str) and not value:
            raise ConfigError(name, "a non-empty string (or leave it out)", value)
        return value


Parser = Integer | Integers | Names | Number | Flag | Text


def _judge_named(judge: str) -> bool:
    return judge in ("proxy", "checklist") or judge.startswith(("local:", "openai:"))


def _device_map_named(device_map: str | None) -> bool:
    return device_map is None or device_map in DEVICE_MAPS or device_map.startswith("cuda:")


@dataclass(frozen=True)
class Field:
    """How one RunConfig field is read, from command-line text, a TOML value or a typed value
    (a preset, a run.json read back): its parser (type and range), then rules on the parsed
    value, each with the text a refusal names as expected. Every refusal is one ConfigError
    line: `field: expected X, found Y`."""

    parse: Parser
    rules: tuple[tuple[Callable[[Any], bool], str], ...] = ()

    def read(self, name: str, value: Any) -> Any:
        parsed = self.parse(name, value)
        for holds, expected in self.rules:
            if not holds(parsed):
                raise ConfigError(name, expected, parsed)
        return parsed


_AUDITOR_SPLIT = (lambda n: n != 0, "at least one pair per attribute (the auditor needs train, validation and test)")

FIELDS: dict[str, Field] = {
    "train_pairs": Field(Integer(0, MAX_COUNT, UNSET_COUNT), (_AUDITOR_SPLIT,)),
    "validation_pairs": Field(Integer(0, MAX_COUNT, UNSET_COUNT), (_AUDITOR_SPLIT,)),
    "test_pairs": Field(Integer(0, MAX_COUNT, UNSET_COUNT), (_AUDITOR_SPLIT,)),
    "transfer_pairs": Field(Integer(0, MAX_COUNT, UNSET_COUNT)),
    "horizon": Field(Integer(1, 32)),  # two 16-query blocks
    "seeds": Field(Integers(0, EM_SEED_MAX), ((bool, "at least one EM seed"),)),
    "caps": Field(Integers(1, 1_000)),
    "ks": Field(Integers(1, 1_000)),
    "models": Field(Names("model names"), ((bool, "at least one response model"),)),
    "backend": Field(Text(required=True), ((lambda b: b in BACKENDS, f"one of {', '.join(BACKENDS)}"),)),
    "max_new_tokens": Field(Integer(1, 1 << 20)),
    "temperature": Field(Number(0, 100)),
    "history_turns": Field(Integer(0, MAX_COUNT, UNSET_COUNT)),
    "batch_size": Field(Integer(1, 65_536)),
    "encoder": Field(Text(required=True)),
    "judge": Field(Text(required=True), (
        (_judge_named, "proxy, checklist, local:MODEL or openai:URL#MODEL"),
        (lambda j: not j.startswith("openai:") or "#" in j, "openai:URL#MODEL (the model name after '#')"),
    )),
    "pairwise": Field(Flag()),
    "pairwise_model": Field(Text()),
    "n_boot": Field(Integer(1, 1_000_000)),
    "data_seed": Field(Integer(0, EM_SEED_MAX)),
    "data_dir": Field(Text()),
    "corpora_dir": Field(Text()),
    "cache_dir": Field(Text()),
    "seed": Field(Integer(0, SEED_MAX)),
    "progress": Field(Flag()),
    "methods": Field(Names("method keys", unset=("all",))),  # known keys: RunConfig.validate (they follow caps, ks)
    "tensor_parallel_size": Field(Integer(1, 1_024)),
    "device_map": Field(Text(), ((_device_map_named, f"one of {', '.join(DEVICE_MAPS)} or cuda:N"),)),
    "dtype": Field(Text(), ((lambda d: d is None or d in DTYPES, f"one of {', '.join(DTYPES)}"),)),
    "token_budget": Field(Integer(1, 1_000_000_000, unset=("auto",))),
}
"""Every settable RunConfig field (all but `preset`), in the class's order: the one place its
type, range, choices and error texts are written. The command line's flags, a --config file's
[run] table, the presets and a run.json read back are all read through it. A range is what a
run can use: a huge count or seed would otherwise fail deep inside numpy, torch or a loop."""


def read_field(name: str, value: Any) -> Any:
    """One [run] table entry or command-line value, read through its field's entry of FIELDS."""
    if name not in FIELDS:
        raise ConfigError(f"run.{name}", f"one of {sorted(FIELDS)}", name)
    return FIELDS[name].read(name, value)


def resolve(preset: str, file: str | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Preset defaults, then the [run] table of a TOML file, then command-line overrides."""
    if preset not in PRESETS:
        raise ConfigError("--preset", f"one of {sorted(PRESETS)}", preset)
    config = PRESETS[preset]
    if file is not None:
        from dpmem_eval.readers import display
        from dpmem_ref.config.toml_bounds import load_toml
        from dpmem_ref.core.errors import InputError
        from dpmem_ref.core.limits import MAX_CONFIG_BYTES, read_bounded

        try:  # the kernel's reading of a TOML file: a regular file of at most 1 MiB, opened without
            # blocking, pre-scanned (depth, keys, dotted parts) before parsing
            raw = read_bounded(file, MAX_CONFIG_BYTES, "--config", "TOML file")
            data = load_toml(raw, f"--config {display(file)}")
        except InputError as exc:  # names the file and the line; quotes nothing from the file
            raise ConfigError(exc.field, exc.expected, exc.found) from None
        table = data.get("run", data)
        if not isinstance(table, dict):
            raise ConfigError("--config [run]", "a table", type(table).__name__)
        config = replace(config, **{k: read_field(k, v) for k, v in table.items()})
    if overrides:
        config = replace(config, **{k: read_field(k, v) for k, v in overrides.items() if v is not None})
    return config.validate()
