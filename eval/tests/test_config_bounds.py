"""Every `dpmem-eval --config` input is bounded, and bad input is one line.

Generated as an attacker would: pathological TOML (deep nesting, dotted-part bombs) is refused
by the kernel's pre-scan before parsing; every [run] field gets every wrong type (NaN,
infinities, floats where a count is asked, huge integers, nested lists, dates, overlong text)
and is refused with ConfigError (before: OverflowError, AttributeError, silent truncation of
1.5 to 1, or a RecursionError traceback from the CLI). A missing encoder is an `error:` line.
"""

from __future__ import annotations

import datetime
import math
import os
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_eval.pipeline.config import FIELDS, PRESETS, ConfigError, RunConfig, read_field, resolve

ROOT = Path(__file__).resolve().parents[2]
INTEGER_FIELDS = ["horizon", "max_new_tokens", "batch_size", "n_boot", "data_seed", "seed", "tensor_parallel_size"]
LIST_FIELDS = ["seeds", "caps", "ks"]

WRONG_NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).filter(lambda f: not (math.isfinite(f) and f == int(f) and abs(f) < 2**53)),
    st.sampled_from([math.nan, math.inf, -math.inf, 1.5, -0.5]),
    st.integers(min_value=2**64),
    st.integers(max_value=-1),
    st.text(alphabet="9", min_size=25, max_size=6000),
    st.sampled_from(["x", "", "1e3", "0x10", "١٢", "nan", "inf", "1 2"]),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.booleans(),
    st.none(),
    st.just(datetime.date(2020, 1, 1)),
)


def coerced(name: str, value: object) -> RunConfig:
    return replace(PRESETS["smoke"], **{name: read_field(name, value)}).validate()


def assert_config_error(name: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        coerced(name, value)
    message = str(info.value)
    assert "\n" not in message and len(message) < 300, message


@pytest.mark.parametrize("name", INTEGER_FIELDS)
@given(value=WRONG_NUMBER)
def test_integer_fields_refuse_every_wrong_number(name: str, value: object) -> None:
    if name in ("data_seed", "seed") and isinstance(value, int) and not isinstance(value, bool) and 0 <= value:
        return  # a seed may be large; integers >= 2**64 are refused by the range below anyway
    assert_config_error(name, value)


@pytest.mark.parametrize("name", LIST_FIELDS)
@given(value=st.lists(WRONG_NUMBER, min_size=1, max_size=3) | st.just([[1]]) | st.just([0.5]) | st.just(5))
def test_list_fields_refuse_every_wrong_entry(name: str, value: object) -> None:
    if name == "seeds" and isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in value):
        return
    assert_config_error(name, value)


@given(value=st.one_of(st.floats(allow_nan=True).filter(lambda t: not (0 <= t <= 100)), st.just(math.nan), st.none(), st.lists(st.integers())))
def test_temperature_is_a_finite_number_in_range(value: object) -> None:
    assert_config_error("temperature", value)


TEXT_FIELDS = ["backend", "encoder", "judge", "pairwise_model", "data_dir", "corpora_dir", "cache_dir", "device_map", "dtype"]


@pytest.mark.parametrize("name", TEXT_FIELDS)
@given(value=st.one_of(st.integers(), st.lists(st.text(max_size=2), max_size=2), st.text(min_size=5000, max_size=5000)))
def test_text_fields_refuse_other_types_and_overlong_text(name: str, value: object) -> None:
    assert_config_error(name, value)


@given(value=st.lists(st.one_of(st.integers(), st.none(), st.just(""), st.text(min_size=5000, max_size=5000)), min_size=1, max_size=3))
def test_name_lists_refuse_non_names(value: list[object]) -> None:
    assert_config_error("models", value)


def test_in_range_values_are_kept() -> None:
    config = coerced("horizon", 32)
    assert config.horizon == 32 and coerced("seeds", "0, 1,2").seeds == (0, 1, 2)
    assert coerced("temperature", 0).temperature == 0.0 and coerced("max_new_tokens", "12").max_new_tokens == 12
    assert_config_error("horizon", 33)


def test_the_field_table_covers_every_settable_field_in_order() -> None:
    assert list(FIELDS) == [f.name for f in fields(RunConfig) if f.name != "preset"]
    with pytest.raises(ConfigError, match=r"^run\.preset: expected one of \["):
        read_field("preset", "cpu")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_passes_the_table_unchanged(name: str) -> None:
    assert PRESETS[name].validate() == PRESETS[name]


@pytest.mark.parametrize("name, value, message", [
    ("backend", "gpu", "backend: expected one of hf, vllm, echo, found 'gpu'"),
    ("judge", "openai:http://x/v1", "judge: expected openai:URL#MODEL (the model name after '#'), found 'openai:http://x/v1'"),
    ("dtype", "int8", "dtype: expected one of bfloat16, float16, float32, found 'int8'"),
    ("device_map", "tpu", "device_map: expected one of auto, balanced, sequential, cpu, cuda or cuda:N, found 'tpu'"),
    ("seeds", "", "seeds: expected at least one EM seed, found ()"),
    ("models", "", "models: expected at least one response model, found ()"),
    ("train_pairs", 0, "train_pairs: expected at least one pair per attribute (the auditor needs train, validation "
                       "and test), found 0"),
    ("transfer_pairs", -1, "transfer_pairs: expected an integer in 0..1000000, found -1"),
    ("token_budget", "0", "token_budget: expected an integer in 1..1000000000, found 0"),
    ("temperature", 10**400, "temperature: expected a finite number in [0, 100], found 'a larger one'"),
])
def test_a_bad_value_is_one_line_naming_field_expected_and_found(name: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        read_field(name, value)
    assert str(info.value) == message


def test_typed_values_are_read_through_the_table_too() -> None:
    """A value that never passed the command line (a preset edited in code, a run.json read
    back) meets the same ranges: validate() reads every field through FIELDS."""
    with pytest.raises(ConfigError, match="^seed: expected an integer in 0..4294967295, found 4294967296$"):
        replace(PRESETS["smoke"], seed=2**32).validate()
    with pytest.raises(ConfigError, match="^batch_size: expected an integer in 1..65536, found 0$"):
        replace(PRESETS["smoke"], batch_size=0).validate()
    assert replace(PRESETS["smoke"], seeds=[0, 1]).validate().seeds == (0, 1)  # type: ignore[arg-type]
    assert read_field("train_pairs", "all") is None and read_field("token_budget", "auto") is None
    assert read_field("methods", "all") is None and read_field("history_turns", None) is None


CONFIGS = {
    "nesting": "[run]\nmodels = " + "[" * 5_000 + "]" * 5_000 + "\n",
    "inline nesting": "[run]\nx = " + "{a = " * 400 + "1" + "}" * 400 + "\n",
    "dotted header": "[" + ".".join(["run"] * 100_000) + "]\n",
    "dotted key": "[run]\n" + ".".join(["k"] * 5_000) + " = 1\n",
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pathological_config_files_are_refused_before_parsing(tmp_path: Path, name: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIGS[name])
    with pytest.raises(ConfigError, match=f"--config {path}: expected TOML within the documented limits"):
        resolve("smoke", str(path))


def test_oversized_config_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[run]\n" + "# x\n" * 300_000)
    with pytest.raises(ConfigError, match=r"^--config: expected a TOML file of at most 1048576 bytes, found .1200006 bytes: "):
        resolve("smoke", str(path))


def _dpmem_eval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'eval'}:{ROOT}", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_HOME=str(tmp_path / "hf"), CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "dpmem_eval", *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_cli_prints_one_error_line_for_a_deep_config_and_a_missing_encoder(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(CONFIGS["nesting"])
    result = _dpmem_eval(tmp_path, "run", "--config", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("dpmem-eval: error: --config "), result.stderr
    result = _dpmem_eval(tmp_path, "run", "--preset", "smoke", "--backend", "echo", "--encoder", str(tmp_path / "none"),
                         "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"dpmem-eval: error: missing encoder {tmp_path / 'none'}: "), result.stderr
    assert not (tmp_path / "out").exists()
