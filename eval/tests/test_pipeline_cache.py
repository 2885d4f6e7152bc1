"""The persistent response cache: reruns are free, interrupted runs resume; configuration
precedence and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dpmem_eval.pipeline.backends import DecodingConfig, EchoBackend
from dpmem_eval.pipeline.cache import ResponseCache, cache_key
from dpmem_eval.pipeline.config import ConfigError, resolve
from dpmem_eval.pipeline.generation import CachedGenerator


def prompts(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "system", "content": "sys"}, {"role": "user", "content": f"question {i}"}] for i in range(n)]


class Interrupting(EchoBackend):
    """Fails after `budget` batches, like a run killed half way."""

    def __init__(self, budget: int) -> None:
        super().__init__("echo")
        self.budget = budget

    def generate(self, batch, decoding):
        if self.budget == 0:
            raise KeyboardInterrupt
        self.budget -= 1
        return super().generate(batch, decoding)


def test_rerun_is_served_from_the_cache(tmp_path):
    decoding = DecodingConfig(max_new_tokens=8)
    first = CachedGenerator(EchoBackend(), ResponseCache(tmp_path / "r.sqlite"), decoding, batch_size=4, progress=False)
    out1 = first.generate(prompts(10))
    assert first.stats.generated == 10 and first.stats.cache_hits == 0
    backend = EchoBackend()
    second = CachedGenerator(backend, ResponseCache(tmp_path / "r.sqlite"), decoding, batch_size=4, progress=False)
    assert second.generate(prompts(10)) == out1
    assert second.stats.generated == 0 and second.stats.cache_hits == 10 and backend.calls == []


def test_duplicate_prompts_are_generated_once(tmp_path):
    gen = CachedGenerator(EchoBackend(), ResponseCache(tmp_path / "r.sqlite"), DecodingConfig(), progress=False)
    out = gen.generate(prompts(3) + prompts(3))
    assert gen.stats.generated == 3 and out[:3] == out[3:]


def test_interrupted_run_resumes_where_it_stopped(tmp_path):
    decoding = DecodingConfig(max_new_tokens=8)
    cache = ResponseCache(tmp_path / "r.sqlite")
    broken = CachedGenerator(Interrupting(budget=2), cache, decoding, batch_size=3, progress=False)
    with pytest.raises(KeyboardInterrupt):
        broken.generate(prompts(10))
    assert len(cache) == 6  # two finished batches were written before the interruption
    backend = EchoBackend()
    resumed = CachedGenerator(backend, ResponseCache(tmp_path / "r.sqlite"), decoding, batch_size=3, progress=False)
    resumed.generate(prompts(10))
    assert resumed.stats.cache_hits == 6 and resumed.stats.generated == 4
    assert len(backend.calls) == 4


def test_key_depends_on_model_decoding_and_prompt():
    base = cache_key("m", {"max_new_tokens": 8}, "p")
    assert base == cache_key("m", {"max_new_tokens": 8}, "p")
    assert base != cache_key("m2", {"max_new_tokens": 8}, "p")
    assert base != cache_key("m", {"max_new_tokens": 9}, "p")
    assert base != cache_key("m", {"max_new_tokens": 8}, "p2")


def test_precedence_cli_over_file_over_preset(tmp_path):
    file = tmp_path / "run.toml"
    file.write_text('[run]\nhorizon = 5\nmax_new_tokens = 20\nmodels = ["a", "b"]\n')
    config = resolve("smoke", str(file), {"horizon": 7})
    assert config.horizon == 7 and config.max_new_tokens == 20 and config.models == ("a", "b")
    assert config.seeds == (0,)  # from the preset


@pytest.mark.parametrize("preset, overrides, message", [
    ("nope", {}, "--preset: expected one of ['cpu', 'paper', 'smoke'], found 'nope'"),
    ("smoke", {"horizon": 40}, "horizon: expected an integer in 1..32, found 40"),
    ("smoke", {"judge": "claude"}, "judge: expected proxy, checklist, local:MODEL or openai:URL#MODEL, found 'claude'"),
    ("smoke", {"seeds": "x"}, "seeds: expected an integer, found 'x'"),
    ("smoke", {"test_pairs": "0"}, "test_pairs: expected at least one pair per attribute (the auditor needs train, validation and test), found 0"),
])
def test_bad_configuration_names_the_field(preset, overrides, message):
    with pytest.raises(ConfigError) as info:
        resolve(preset, None, overrides)
    assert str(info.value) == message


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    env_path = str(Path(__file__).resolve().parents[1]) + ":" + str(Path(__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, "-m", "dpmem_eval", "run", "--preset", "huge", "--out", str(tmp_path)],
                          capture_output=True, text=True, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["dpmem-eval: error: --preset: expected one of ['cpu', 'paper', 'smoke'], found 'huge'"]
    proc = subprocess.run([sys.executable, "-m", "dpmem_eval", "report", "--out", str(tmp_path / "none")],
                          capture_output=True, text=True, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "no run.json" in proc.stderr
